#define BOOST_TEST_MODULE apps
#include <boost/test/unit_test.hpp>
