#define BOOST_TEST_MODULE runtime_kv
#include <boost/test/unit_test.hpp>
