#define BOOST_TEST_MODULE planes_codec
#include <boost/test/unit_test.hpp>
