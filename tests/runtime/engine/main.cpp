#define BOOST_TEST_MODULE runtime_engine
#include <boost/test/unit_test.hpp>
