#define BOOST_TEST_MODULE runtime_model_cuda_plan
#include <boost/test/unit_test.hpp>
