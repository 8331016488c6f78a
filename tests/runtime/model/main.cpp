#define BOOST_TEST_MODULE runtime_model
#include <boost/test/unit_test.hpp>
