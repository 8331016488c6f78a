#define BOOST_TEST_MODULE planes_http_client
#include <boost/test/unit_test.hpp>
