#include "runtime/bench/stats.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::bench;

BOOST_AUTO_TEST_SUITE(stats)

BOOST_AUTO_TEST_CASE(nearest_rank_percentiles) {
  sample_set s;
  for (int i = 100; i >= 1; --i)
    s.add(i);
  BOOST_TEST(s.percentile(50) == 50.0);
  BOOST_TEST(s.percentile(99) == 99.0);
  BOOST_TEST(s.percentile(100) == 100.0);
  BOOST_TEST(s.percentile(0) == 1.0);
  auto sum = s.summarize();
  BOOST_TEST(sum.count == 100u);
  BOOST_TEST(sum.mean == 50.5);
  BOOST_TEST(sum.min == 1.0);
  BOOST_TEST(sum.max == 100.0);
}

BOOST_AUTO_TEST_CASE(empty_and_merge) {
  sample_set a, b;
  BOOST_TEST(a.percentile(50) == 0.0);
  a.add(3);
  b.add(1);
  b.add(2);
  a.merge(b);
  BOOST_TEST(a.size() == 3u);
  BOOST_TEST(a.percentile(50) == 2.0);
  BOOST_TEST(to_json(a.summarize(), 1000.0).find("\"p50\":2000.0000") != std::string::npos);
}

// Weighted samples rank as the same values repeated.
BOOST_AUTO_TEST_CASE(weighted_percentile_matches_repeated_samples) {
  std::vector<std::pair<double, uint64_t>> w{{10, 2}, {2, 6}};
  sample_set flat;
  for (double v : {2, 2, 2, 2, 2, 2, 10, 10})
    flat.add(v);
  for (double p : {0.0, 50.0, 75.0, 76.0, 90.0, 100.0})
    BOOST_TEST(weighted_percentile(w, p) == flat.percentile(p), "p" << p);
  BOOST_TEST(weighted_percentile(w, 90) == 10.0);
  std::vector<std::pair<double, uint64_t>> none{{5, 0}};
  BOOST_TEST(weighted_percentile(none, 50) == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
