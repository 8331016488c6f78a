#define BOOST_TEST_MODULE runtime_plan_binary_tests
#include <boost/test/unit_test.hpp>
