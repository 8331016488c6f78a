#define BOOST_TEST_MODULE runtime_gguf
#include <boost/test/unit_test.hpp>
