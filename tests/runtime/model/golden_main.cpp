#define BOOST_TEST_MODULE runtime_model_golden
#include <boost/test/unit_test.hpp>
