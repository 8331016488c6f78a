#define BOOST_TEST_MODULE runtime_grammar
#include <boost/test/unit_test.hpp>
