#define BOOST_TEST_MODULE actors_core
#include <boost/test/unit_test.hpp>
