#define BOOST_TEST_MODULE runtime_core
#include <boost/test/unit_test.hpp>
