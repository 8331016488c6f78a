#define BOOST_TEST_MODULE runtime_route
#include <boost/test/unit_test.hpp>
