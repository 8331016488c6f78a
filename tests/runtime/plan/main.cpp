#define BOOST_TEST_MODULE runtime_plan_tests
#include <boost/test/unit_test.hpp>
