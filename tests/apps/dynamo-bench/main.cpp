#define BOOST_TEST_MODULE apps_bench_tests
#include <boost/test/unit_test.hpp>
