#define BOOST_TEST_MODULE apps_launch_tests
#include <boost/test/unit_test.hpp>
