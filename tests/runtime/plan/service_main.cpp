#define BOOST_TEST_MODULE runtime_plan_service_tests
#include <boost/test/unit_test.hpp>
