#define BOOST_TEST_MODULE planes_event
#include <boost/test/unit_test.hpp>
