#define BOOST_TEST_MODULE actors_router
#include <boost/test/unit_test.hpp>
