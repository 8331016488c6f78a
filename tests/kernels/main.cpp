#define BOOST_TEST_MODULE kernels_ref
#include <boost/test/unit_test.hpp>
