#include "runtime/kvbm/frequency_filter.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::kvbm;
using namespace std::chrono_literals;

namespace {
const frequency_filter::time_point t0{};
}

BOOST_AUTO_TEST_SUITE(frequency_filter_suite)

// Dynamo's test_basic_frequency_filter.
BOOST_AUTO_TEST_CASE(a_block_passes_the_second_time) {
  frequency_filter f;
  BOOST_TEST(!f.should_offload(0, t0));
  BOOST_TEST(f.should_offload(0, t0));
  BOOST_TEST(!f.should_offload(1, t0));
  BOOST_TEST(!f.should_offload(2, t0));
  BOOST_TEST(f.count(0) == 2);
}

BOOST_AUTO_TEST_CASE(counts_double_and_decay_by_one_per_interval) {
  frequency_filter f({.min_frequency = 4, .decay_interval = 600s, .max_entries = 100});
  BOOST_TEST(!f.should_offload(7, t0));
  BOOST_TEST(!f.should_offload(7, t0));
  BOOST_TEST(f.should_offload(7, t0)); // 4
  (void)f.should_offload(8, t0 + 1199s); // one interval: 7 drops to 3
  BOOST_TEST(f.count(7) == 3);
  (void)f.should_offload(8, t0 + 1800s); // two more: 7 at 1, 8 forgotten (1 - 2), counted again
  BOOST_TEST(f.count(7) == 1);
  BOOST_TEST(f.count(8) == 1);
  (void)f.should_offload(9, t0 + 2400s);
  BOOST_TEST(f.count(7) == 0); // forgotten
  BOOST_TEST(f.count(8) == 0);
  BOOST_TEST(f.size() == 1u);
}

// Dynamo's test_decay: past max_entries the counts decay until the map fits.
BOOST_AUTO_TEST_CASE(an_oversized_map_decays) {
  frequency_filter f({.min_frequency = 4, .decay_interval = 3600s, .max_entries = 2});
  BOOST_TEST(!f.should_offload(0, t0));
  BOOST_TEST(!f.should_offload(0, t0));
  BOOST_TEST(!f.should_offload(1, t0));
  BOOST_TEST(!f.should_offload(1, t0));
  BOOST_TEST(f.should_offload(0, t0)); // 4
  BOOST_TEST(!f.should_offload(2, t0)); // 3 entries: one decay step
  BOOST_TEST(f.count(0) == 3);
  BOOST_TEST(f.count(1) == 1);
  BOOST_TEST(f.count(2) == 0);
  BOOST_TEST(f.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
