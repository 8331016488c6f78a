#define BOOST_TEST_MODULE planes_kubernetes
#include <boost/test/unit_test.hpp>
