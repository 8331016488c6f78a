#define BOOST_TEST_MODULE runtime_config
#include <boost/test/unit_test.hpp>
