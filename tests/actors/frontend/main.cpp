#define BOOST_TEST_MODULE actors_frontend
#include <boost/test/unit_test.hpp>
