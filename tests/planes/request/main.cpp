#define BOOST_TEST_MODULE planes_request
#include <boost/test/unit_test.hpp>
