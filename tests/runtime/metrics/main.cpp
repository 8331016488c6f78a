#define BOOST_TEST_MODULE runtime_metrics
#include <boost/test/unit_test.hpp>
