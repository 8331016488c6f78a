#define BOOST_TEST_MODULE runtime_protocol
#include <boost/test/unit_test.hpp>
