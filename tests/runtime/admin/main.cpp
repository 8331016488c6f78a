#define BOOST_TEST_MODULE runtime_admin
#include <boost/test/unit_test.hpp>
