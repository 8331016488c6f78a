#include "runtime/plan/sla_sizing.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::plan;

namespace {

/// Prompts of 100 tokens take 50 ms; a decode step of b sequences 10 + 0.1 b
/// ms at any context (two rows so context interpolation is exercised).
engine_profile linear_profile() {
  engine_profile p;
  p.max_num_seqs = 256;
  p.max_kv_tokens = 1'000'000;
  p.prefill = {{100, 0.0, 0, 50.0}, {200, 0.0, 0, 100.0}};
  for (uint32_t ctx : {100u, 1000u})
    for (uint32_t b : {1u, 200u})
      p.decode.push_back({b, ctx, 10.0 + 0.1 * b});
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sla_sizing_suite)

BOOST_AUTO_TEST_CASE(prompts_stretch_the_decode_step_they_interrupt) {
  // 3 engines at 20 req/s: 6.67 req/s each, rho = 6.67 x 0.05 = 1/3;
  // batch = 6.67 x 100 x (10 + 0.1 b) / 1000 / (2/3) = 10 + 0.1 b -> 100/9.
  auto e = estimate_aggregated(linear_profile(), 20.0, 100, 100, 3);
  BOOST_REQUIRE(e);
  BOOST_TEST(e->prefill_share == 1.0 / 3.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(e->batch == 100.0 / 9.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(e->itl_ms == 1.5 * (10.0 + 10.0 / 9.0), boost::test_tools::tolerance(1e-9));
  // 50 + step + (1/3) x 50 / (2 x 2/3) = 50 + 11.11 + 12.5
  BOOST_TEST(e->ttft_ms == 50.0 + 10.0 + 10.0 / 9.0 + 12.5, boost::test_tools::tolerance(1e-9));
  // One engine would spend all its time on prompts.
  BOOST_TEST(!estimate_aggregated(linear_profile(), 20.0, 100, 100, 1));
}

BOOST_AUTO_TEST_CASE(the_fewest_engines_meeting_both_targets) {
  const engine_profile p = linear_profile();
  // Summed capacities would say 2 (20 x (100/2000 + 100/5000) = 1.4), but at 2
  // engines rho = 0.5 doubles every step: ITL >= 20 ms misses a 20 ms target.
  BOOST_TEST(*aggregated_engines_for_sla(p, {1000, 20}, 20.0, 100, 100, 8) == 3u);
  BOOST_TEST(*aggregated_engines_for_sla(p, {1000, 25}, 20.0, 100, 100, 8) == 2u);
  // TTFT binds too: 87.5 ms at 2 engines, 73.6 at 3, 69.0 at 4.
  BOOST_TEST(*aggregated_engines_for_sla(p, {70, 1000}, 20.0, 100, 100, 8) == 4u);
  BOOST_TEST(!aggregated_engines_for_sla(p, {1000, 20}, 20.0, 100, 100, 2));
  // Idle traffic needs one engine; a target no engine meets needs none.
  BOOST_TEST(*aggregated_engines_for_sla(p, {1000, 20}, 0.0, 100, 100, 8) == 1u);
  BOOST_TEST(!aggregated_engines_for_sla(p, {1000, 5}, 0.0, 100, 100, 8));
}

BOOST_AUTO_TEST_CASE(a_batch_beyond_the_engine_is_no_estimate) {
  engine_profile p = linear_profile();
  p.max_num_seqs = 8; // 100/9 sequences in flight do not fit
  BOOST_TEST(!estimate_aggregated(p, 20.0, 100, 100, 3));
}

BOOST_AUTO_TEST_CASE(prefill_engines_queue_prompts_against_ttft) {
  const engine_profile p = linear_profile(); // 50 ms per 100-token prompt
  // 30 prompts/s: 1 engine is overloaded (rho 1.5); 2: rho 0.75, wait 0.75 x 50 / 0.5 = 75 ms;
  // 3: rho 0.5, wait 25 ms; 4: rho 0.375, wait 15 ms.
  BOOST_TEST(*prefill_engines_for_sla(p, {130, 1000}, 30.0, 100, 8) == 2u);
  BOOST_TEST(*prefill_engines_for_sla(p, {120, 1000}, 30.0, 100, 8) == 3u);
  BOOST_TEST(*prefill_engines_for_sla(p, {66, 1000}, 30.0, 100, 8) == 4u);
  BOOST_TEST(!prefill_engines_for_sla(p, {66, 1000}, 30.0, 100, 3));
  BOOST_TEST(*prefill_engines_for_sla(p, {50, 1000}, 0.0, 100, 8) == 1u);
  BOOST_TEST(!prefill_engines_for_sla(p, {49, 1000}, 0.0, 100, 8)); // the prompt alone is too slow
}

BOOST_AUTO_TEST_SUITE_END()
