#include "runtime/configure/traffic.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>

using namespace dynamo;
using namespace dynamo::configure;

BOOST_AUTO_TEST_SUITE(traffic_tests)

BOOST_AUTO_TEST_CASE(length_distributions_parse) {
  auto f = parse_length_dist("512");
  BOOST_TEST_REQUIRE(static_cast<bool>(f));
  BOOST_TEST((f->shape == length_dist::kind::fixed && f->a == 512));
  auto n = parse_length_dist("normal:1024,128");
  BOOST_TEST_REQUIRE(static_cast<bool>(n));
  BOOST_TEST((n->shape == length_dist::kind::normal && n->a == 1024 && n->b == 128));
  auto u = parse_length_dist("uniform:10,20");
  BOOST_TEST_REQUIRE(static_cast<bool>(u));
  BOOST_TEST(u->mean() == 15.0);
  BOOST_TEST(to_string(*u) == "uniform:10,20");
  for (const char* bad : {"normal:5", "uniform:20,10", "poisson:3", "fixed:abc", "fixed:0", ""})
    BOOST_TEST(!parse_length_dist(bad), bad);
}

BOOST_AUTO_TEST_CASE(requests_are_deterministic_and_share_prefixes) {
  traffic_spec t;
  t.isl = {length_dist::kind::uniform, 200, 300};
  t.osl = {length_dist::kind::fixed, 7, 0};
  t.rate = 50;
  t.requests = 200;
  t.prefix_groups = 1;
  t.prefix_share = 0.5;
  auto a = make_requests(t);
  auto b = make_requests(t);
  BOOST_TEST_REQUIRE(a.requests.size() == 200u);
  BOOST_TEST(a.block_ids == b.block_ids);
  for (size_t i = 0; i < a.requests.size(); ++i) {
    const auto& r = a.requests[i];
    BOOST_TEST((r.isl >= 200 && r.isl <= 300 && r.osl == 7));
    BOOST_TEST(r.num_blocks == (r.isl + 63) / 64);
    if (i > 0)
      BOOST_TEST(r.arrival_ms >= a.requests[i - 1].arrival_ms);
    // One group: the first block (64 of at least 200 * 0.5 shared tokens) is everyone's.
    BOOST_TEST(a.block_ids[r.first_block] == a.block_ids[a.requests[0].first_block]);
  }
  // Beyond the shared part prompts differ.
  BOOST_TEST(a.block_ids[a.requests[0].first_block + 1] != a.block_ids[a.requests[1].first_block + 1]);
  // The mean rate is near 50/s (200 draws: within 20%).
  BOOST_TEST(a.duration_s() > 199 / 50.0 * 0.8);
  BOOST_TEST(a.duration_s() < 199 / 50.0 * 1.2);
}

BOOST_AUTO_TEST_CASE(traces_chain_their_hash_ids) {
  std::vector<route::trace_record> recs{{0, 1000, 10, {1, 2}, 0}, {500, 900, 20, {1, 3}, 0}, {1000, 100, 5, {2}, 0}};
  auto rs = requests_from_trace(recs, 512, 0, 0);
  BOOST_TEST_REQUIRE(rs.requests.size() == 3u);
  BOOST_TEST(rs.block_tokens == 512u);
  BOOST_TEST(rs.requests[1].arrival_ms == 500.0);
  BOOST_TEST(rs.block_ids[0] == rs.block_ids[2]); // same first block
  BOOST_TEST(rs.block_ids[1] != rs.block_ids[3]);
  BOOST_TEST(rs.block_ids[4] != rs.block_ids[0]); // id 2 first is not id 1's chain
  auto fast = requests_from_trace(recs, 512, 4.0, 2); // 2 requests at 4/s: 250 ms apart
  BOOST_TEST(fast.requests.size() == 2u);
  BOOST_TEST(fast.requests[1].arrival_ms == 250.0);
}

BOOST_AUTO_TEST_CASE(written_traffic_reads_back_as_the_same_requests) {
  traffic_spec t;
  t.isl = {length_dist::kind::normal, 300, 120};
  t.osl = {length_dist::kind::uniform, 4, 40};
  t.rate = 30;
  t.requests = 100;
  t.prefix_groups = 3;
  t.prefix_share = 0.6;
  const auto a = make_requests(t);
  const auto recs = to_trace(a);
  BOOST_TEST_REQUIRE(recs.size() == a.requests.size());
  const auto b = requests_from_trace(recs, a.block_tokens, 0, 0);
  BOOST_TEST_REQUIRE(b.requests.size() == a.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) {
    const auto &x = a.requests[i], &y = b.requests[i];
    // Whole-ms timestamps, measured from the first arrival (which is 0).
    BOOST_TEST(std::abs(y.arrival_ms - x.arrival_ms) <= 0.5);
    BOOST_TEST(y.arrival_ms == std::round(y.arrival_ms));
    BOOST_TEST((x.isl == y.isl && x.osl == y.osl && x.num_blocks == y.num_blocks));
    // Shared prefixes stay shared, and only them: block by block against request 0.
    const auto& z = a.requests[0];
    const auto& w = b.requests[0];
    for (uint32_t k = 0; k < std::min(x.num_blocks, z.num_blocks); ++k)
      BOOST_TEST((a.block_ids[x.first_block + k] == a.block_ids[z.first_block + k]) ==
                 (b.block_ids[y.first_block + k] == b.block_ids[w.first_block + k]));
  }
}

BOOST_AUTO_TEST_SUITE_END()
