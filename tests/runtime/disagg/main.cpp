#define BOOST_TEST_MODULE runtime_disagg
#include <boost/test/unit_test.hpp>
