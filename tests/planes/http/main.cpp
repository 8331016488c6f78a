#define BOOST_TEST_MODULE planes_http
#include <boost/test/unit_test.hpp>
