#define BOOST_TEST_MODULE runtime_configure_tests
#include <boost/test/unit_test.hpp>
