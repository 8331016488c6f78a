#define BOOST_TEST_MODULE runtime_openai
#include <boost/test/unit_test.hpp>
