#define BOOST_TEST_MODULE actors_admin
#include <boost/test/unit_test.hpp>
