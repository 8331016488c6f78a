#define BOOST_TEST_MODULE runtime_kvbm
#include <boost/test/unit_test.hpp>
