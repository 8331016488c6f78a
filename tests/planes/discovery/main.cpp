#define BOOST_TEST_MODULE planes_discovery
#include <boost/test/unit_test.hpp>
