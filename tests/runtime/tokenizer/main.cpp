#define BOOST_TEST_MODULE runtime_tokenizer
#include <boost/test/unit_test.hpp>
