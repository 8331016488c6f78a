#define BOOST_TEST_MODULE planes_transfer
#include <boost/test/unit_test.hpp>
