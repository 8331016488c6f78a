#define BOOST_TEST_MODULE apps_common_tests
#include <boost/test/unit_test.hpp>
