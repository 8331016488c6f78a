#include "runtime/configure/search.hpp"
#include "sim_fixtures.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::configure;

namespace {

evaluated point(double tps_per_gpu, double ttft, double itl, bool meets = true, uint32_t gpus = 1) {
  evaluated e;
  e.r.tokens_per_s_per_gpu = tps_per_gpu;
  e.r.ttft_ms = ttft;
  e.r.itl_ms = itl;
  e.r.requests = e.r.completed = 10;
  e.r.gpus = gpus;
  e.meets_sla = meets;
  return e;
}

search_space one_point_space(uint32_t budget, uint32_t gpus_per_worker) {
  search_space s;
  s.max_num_seqs = {64};
  s.max_num_batched_tokens = {2048};
  s.thresholds = {512};
  s.routers = {route::router_mode::kv};
  s.gpu_budget = budget;
  s.gpus_per_worker = gpus_per_worker;
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(search_tests)

BOOST_AUTO_TEST_CASE(candidates_respect_the_budget) {
  auto c = enumerate(one_point_space(4, 2)); // 2 workers at most: agg 1, agg 2, disagg 1P+1D
  BOOST_TEST_REQUIRE(c.size() == 3u);
  BOOST_TEST((c[0].mode == deployment_mode::aggregated && c[0].decode_replicas == 1));
  BOOST_TEST((c[1].mode == deployment_mode::aggregated && c[1].decode_replicas == 2));
  BOOST_TEST((c[2].mode == deployment_mode::disaggregated && c[2].prefill_replicas == 1 &&
              c[2].decode_replicas == 1));

  auto big = enumerate(one_point_space(6, 1)); // agg 1..6 + the 15 (P, D) with P + D <= 6
  BOOST_TEST(big.size() == 6u + 15u);
  for (const auto& d : big)
    BOOST_TEST(d.workers() <= 6u);

  search_space full = one_point_space(3, 1);
  full.max_num_seqs = {16, 32};
  full.routers = {route::router_mode::kv, route::router_mode::round_robin};
  full.aggregated = false;
  BOOST_TEST(enumerate(full).size() == 2u * 2u * 3u); // (1,1) (1,2) (2,1)
}

BOOST_AUTO_TEST_CASE(pareto_front_keeps_the_non_dominated) {
  std::vector<evaluated> r{
    point(100, 50, 10),  // 0: front (best throughput)
    point(80, 40, 10),   // 1: front (lower TTFT)
    point(80, 60, 10),   // 2: dominated by 0
    point(50, 40, 5),    // 3: front (lower ITL)
    point(50, 40, 5),    // 4: duplicate of 3: dropped
    point(40, 45, 6),    // 5: dominated by 3
  };
  r.push_back(point(200, 1, 1));
  r.back().r.completed = 9; // 6: incomplete: left out
  auto f = pareto_front(r);
  BOOST_TEST(f == (std::vector<size_t>{0, 1, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(winner_meets_the_sla_with_the_most_per_gpu) {
  std::vector<evaluated> r{point(300, 10, 1, false), point(100, 90, 9), point(99.5, 50, 9),
                           point(99.5, 50, 9, true, 2), point(60, 1, 1)};
  auto w = pick_winner(r);
  BOOST_TEST_REQUIRE(w.has_value());
  BOOST_TEST(*w == 2u); // within 1% of the best (100): the lower TTFT, then fewer GPUs
  BOOST_TEST(!pick_winner({point(1, 1, 1, false)}).has_value());
}

BOOST_AUTO_TEST_CASE(meets_checks_every_condition) {
  plan::sla_targets sla{100, 10};
  sim_result r;
  r.requests = r.completed = 5;
  r.ttft_ms = 100;
  r.itl_ms = 10;
  BOOST_TEST(meets(r, sla));
  r.itl_ms = 10.5;
  BOOST_TEST(!meets(r, sla));
  r.itl_ms = 10;
  r.kv_overflow = true;
  BOOST_TEST(!meets(r, sla));
  r.kv_overflow = false;
  r.completed = 4;
  BOOST_TEST(!meets(r, sla));
}

// The whole search on a hand-sized case: 10 ms prefill, 2 ms decode steps, a
// request every 100 ms: one worker already meets TTFT 15 / ITL 3, so it wins
// with the most tokens per GPU.
BOOST_AUTO_TEST_CASE(search_end_to_end) {
  std::vector<test::req_spec> specs;
  for (int i = 0; i < 5; ++i)
    specs.push_back({100.0 * i, 100, 5});
  auto rs = test::requests(specs);
  simulator sim(test::constant_profile(10, 2), sim_options{});
  auto results = evaluate(sim, enumerate(one_point_space(2, 1)), rs, {15, 3});
  BOOST_TEST_REQUIRE(results.size() == 3u);
  auto w = pick_winner(results);
  BOOST_TEST_REQUIRE(w.has_value());
  BOOST_TEST((results[*w].d.mode == deployment_mode::aggregated && results[*w].d.decode_replicas == 1));
  BOOST_TEST(results[*w].r.tokens_per_s_per_gpu == 25 / 0.418, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()
