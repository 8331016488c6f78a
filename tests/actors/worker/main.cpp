#define BOOST_TEST_MODULE actors_worker
#include <boost/test/unit_test.hpp>
