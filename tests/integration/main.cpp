#define BOOST_TEST_MODULE integration_cluster
#include <boost/test/unit_test.hpp>
