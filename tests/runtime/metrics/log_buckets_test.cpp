#include "runtime/metrics/log_buckets.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::metrics;
using v = std::vector<double>;

BOOST_AUTO_TEST_SUITE(log_buckets_suite)

BOOST_AUTO_TEST_CASE(rounds_to_two_significant_figures) {
  BOOST_TEST(round_to_significant(0.0, 2) == 0.0);
  BOOST_TEST(round_to_significant(0.002154, 2) == 0.0022);
  BOOST_TEST(round_to_significant(127.9, 2) == 130.0);
  BOOST_TEST(round_to_significant(-4.56, 2) == -4.6);
}

BOOST_AUTO_TEST_CASE(matches_dynamo_frontend_defaults) {
  BOOST_TEST(log_buckets(1.0, 512.0, 10) == (v{0, 2, 4, 8, 16, 32, 64, 130, 260, 510}),
             boost::test_tools::per_element());
  BOOST_TEST(log_buckets(50.0, 128000.0, 12) ==
               (v{0, 100, 210, 430, 870, 1800, 3600, 7400, 15000, 31000, 63000, 130000}),
             boost::test_tools::per_element());
  BOOST_TEST(log_buckets(50.0, 32000.0, 10) ==
               (v{0, 100, 210, 430, 880, 1800, 3700, 7600, 16000, 32000}),
             boost::test_tools::per_element());
  BOOST_TEST(log_buckets(0.001, 480.0, 18) ==
               (v{0, 0.0022, 0.0047, 0.01, 0.022, 0.047, 0.1, 0.22, 0.47, 1, 2.2, 4.7, 10, 22, 48,
                  100, 220, 480}),
             boost::test_tools::per_element());
  BOOST_TEST(log_buckets(0.001, 2.0, 13) ==
               (v{0, 0.0019, 0.0035, 0.0067, 0.013, 0.024, 0.045, 0.084, 0.16, 0.3, 0.56, 1.1, 2}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(degenerate_counts_and_duplicates) {
  BOOST_TEST(log_buckets(1, 2, 0).empty());
  BOOST_TEST(log_buckets(1, 2, 1) == v{0}, boost::test_tools::per_element());
  // 1.05^(i/5) for i = 1..5 rounds to 1.0, 1.0, 1.0, 1.0, 1.1: duplicates are dropped.
  BOOST_TEST(log_buckets(1.0, 1.05, 6) == (v{0, 1.0, 1.1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
