#define BOOST_TEST_MODULE runtime_bench
#include <boost/test/unit_test.hpp>
