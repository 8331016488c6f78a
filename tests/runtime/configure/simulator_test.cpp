#include "runtime/configure/simulator.hpp"
#include "sim_fixtures.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::configure;
using namespace dynamo::configure::test;

namespace {

deployment agg(uint32_t replicas, uint32_t step_tokens = 8192, route::router_mode router = route::router_mode::kv) {
  return deployment{.mode = deployment_mode::aggregated, .decode_replicas = replicas,
                    .max_num_batched_tokens = step_tokens, .router = router};
}

sim_options at(double percentile, double transfer_ms = 0) {
  sim_options o;
  o.percentile = percentile;
  o.transfer_ms = transfer_ms;
  return o;
}

// Prefill-first: every prompt goes to the prefill worker, then hands off.
deployment one_to_one(uint32_t max_num_seqs = 256) {
  return deployment{.mode = deployment_mode::disaggregated, .prefill_replicas = 1, .decode_replicas = 1,
                    .max_num_seqs = max_num_seqs, .max_local_prefill_length = 0};
}

// 1P+1D, prefill 10 ms, decode steps 2 ms, hand-offs 1 ms, p100.
sim_result one_to_one_run(uint32_t max_num_seqs, const std::vector<req_spec>& specs) {
  simulator sim(constant_profile(10, 2), at(100, 1.0));
  return sim.run(one_to_one(max_num_seqs), requests(specs));
}

} // namespace

BOOST_AUTO_TEST_SUITE(simulator_tests)

// One worker, one request: a 10 ms prefill step gives the first token, then
// four 2 ms decode steps.
BOOST_AUTO_TEST_CASE(one_request_on_one_worker) {
  simulator sim(constant_profile(10, 2), at(90));
  auto r = sim.run(agg(1), requests({{0, 100, 5}}));
  BOOST_TEST(r.completed == 1u);
  BOOST_TEST(r.ttft_ms == 10.0);
  BOOST_TEST(r.itl_ms == 2.0);
  BOOST_TEST(r.steps == 5u);
  BOOST_TEST(r.gpus == 1u);
  BOOST_TEST(r.output_tokens_per_s == 5 / 0.018, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(!r.kv_overflow);
}

// Two prompts of 100 tokens at once with a 100-token step budget: A prefills
// alone (t=10); then A decodes while B takes a 99-token chunk (t=20), then B's
// last token (t=30, B's first token); both decode at 2 ms: A at 32, 34; B at
// 32, 34, 36, 38. Gaps: A 10, 10, 2, 2; B 2, 2, 2, 2.
BOOST_AUTO_TEST_CASE(chunked_prefill_queues_the_second_prompt) {
  simulator sim(constant_profile(10, 2), at(100));
  auto rs = requests({{0, 100, 5}, {0, 100, 5}});
  auto r = sim.run(agg(1, 100), rs);
  BOOST_TEST(r.completed == 2u);
  BOOST_TEST(r.ttft_ms == 30.0);
  BOOST_TEST(r.mean_ttft_ms == 20.0);
  BOOST_TEST(r.itl_ms == 10.0);
  BOOST_TEST(r.mean_itl_ms == 4.0);
  BOOST_TEST(r.output_tokens_per_s == 10 / 0.038, boost::test_tools::tolerance(1e-9));

  simulator median(constant_profile(10, 2), at(50));
  auto m = median.run(agg(1, 100), rs);
  BOOST_TEST(m.ttft_ms == 10.0); // nearest rank: the first of two
  BOOST_TEST(m.itl_ms == 2.0);   // 6 of 8 gaps are 2 ms
}

// A CPU engine's profile: two 100-token prompts that queue behind a first
// (0-50 ms) prefill together in one step that costs two 100-token prompts
// (2 x (50 - 10) + 10 = 90 ms: TTFT 50 + 90 - 1), not one of 200 tokens
// (120 ms, as the mocker's timing charges: TTFT 169).
BOOST_AUTO_TEST_CASE(a_real_engines_step_prices_each_prompt_on_its_own) {
  auto p = constant_profile(10, 10);
  p.engine = "cpu";
  p.prefill = {{100, 0, 0, 50.0}, {200, 0, 0, 120.0}};
  const auto rs = requests({{0, 100, 1}, {1, 100, 1}, {1, 100, 1}});
  simulator sim(p, at(100));
  auto r = sim.run(agg(1), rs);
  BOOST_TEST(r.completed == 3u);
  BOOST_TEST(r.ttft_ms == 139.0);
  BOOST_TEST(r.steps == 2u);
  p.engine = "mocker";
  simulator mocker(p, at(100));
  BOOST_TEST(mocker.run(agg(1), rs).ttft_ms == 169.0);
}

// max_num_seqs 1: the second request waits for the first to finish (t=18),
// then runs the same 18 ms.
BOOST_AUTO_TEST_CASE(max_num_seqs_serializes) {
  simulator sim(constant_profile(10, 2), at(100));
  deployment d = agg(1);
  d.max_num_seqs = 1;
  auto r = sim.run(d, requests({{0, 100, 5}, {0, 100, 5}}));
  BOOST_TEST(r.ttft_ms == 28.0);
  BOOST_TEST(r.itl_ms == 2.0);
  BOOST_TEST(r.output_tokens_per_s == 10 / 0.036, boost::test_tools::tolerance(1e-9));
}

// Prefill-first: the prefill worker's prompt is done at 10 ms, the hand-off
// reaches the idle decode worker at 11, which sends the first token when the
// KV has arrived (TTFT 11); its steps (11-13, 13-15) give the second and third.
BOOST_AUTO_TEST_CASE(disaggregated_hand_off) {
  simulator sim(constant_profile(10, 2), at(100, 1.0));
  deployment d = one_to_one();
  auto r = sim.run(d, requests({{0, 100, 3}}));
  BOOST_TEST(r.completed == 1u);
  BOOST_TEST(r.remote_prefills == 1u);
  BOOST_TEST(r.ttft_ms == 11.0);
  BOOST_TEST(r.itl_ms == 2.0);
  BOOST_TEST(r.mean_itl_ms == 2.0);
  BOOST_TEST(r.gpus == 2u);
  // Above the threshold the decode worker prefills itself: no hand-off.
  d.max_local_prefill_length = 101;
  auto local = sim.run(d, requests({{0, 100, 3}}));
  BOOST_TEST(local.remote_prefills == 0u);
  BOOST_TEST(local.ttft_ms == 10.0);
}

// The profile's measured hand-off: 2 ms + 0.5 ms per 16-token block of the
// prompt. 100 tokens are 7 blocks: the KV reaches the decode worker at
// 10 + 2 + 3.5 (TTFT 15.5); 300 tokens, 19 blocks: 10 + 2 + 9.5 (21.5).
// --transfer-ms replaces it with its own constant (1 ms: TTFT 11).
BOOST_AUTO_TEST_CASE(the_profiles_hand_off_is_charged_per_block) {
  plan::engine_profile p = constant_profile(10, 2);
  p.block_size = 16;
  p.handoff = plan::linear_cost{2, 0.5, {}};
  sim_options o;
  o.percentile = 100; // no transfer_ms: the profile's
  simulator measured(p, o);
  BOOST_TEST(measured.handoff_ms(100) == 5.5);
  BOOST_TEST(measured.run(one_to_one(), requests({{0, 100, 3}})).ttft_ms == 15.5);
  BOOST_TEST(measured.run(one_to_one(), requests({{0, 300, 3}})).ttft_ms == 21.5);
  simulator overridden(p, at(100, 1.0));
  BOOST_TEST(overridden.handoff_ms(300) == 1.0);
  BOOST_TEST(overridden.run(one_to_one(), requests({{0, 300, 3}})).ttft_ms == 11.0);
}

// The profile's measured step overhead, 1 ms + 0.5 ms per sequence in the
// step. A's prefill alone: 10 + 1.5 (TTFT 11.5); B's prefill with A's decode:
// 10 + 2 (B's TTFT 23.5, A's gap 12); both decode: 2 + 2 (gaps 4); B alone:
// 2 + 1.5. Without it, the profile's: TTFT 10 and 20, gaps 10, 2, 2, 2.
BOOST_AUTO_TEST_CASE(the_profiles_step_overhead_lengthens_every_step) {
  plan::engine_profile p = constant_profile(10, 2);
  p.step_overhead = plan::linear_cost{1, 0.5, {}};
  const auto rs = requests({{0, 100, 3}, {0, 100, 3}});
  simulator sim(p, at(100));
  auto r = sim.run(agg(1), rs);
  BOOST_TEST(r.ttft_ms == 23.5);
  BOOST_TEST(r.mean_ttft_ms == 17.5);
  BOOST_TEST(r.itl_ms == 12.0);
  BOOST_TEST(r.mean_itl_ms == (12 + 4 + 4 + 3.5) / 4.0);
  sim_options off = at(100);
  off.step_overhead = false;
  simulator plain(p, off);
  auto q = plain.run(agg(1), rs);
  BOOST_TEST(q.ttft_ms == 20.0);
  BOOST_TEST(q.mean_ttft_ms == 15.0);
  BOOST_TEST(q.mean_itl_ms == 4.0);
}

// max_num_seqs 1 on both workers: B's prompt waits for A's (prefill 0-10,
// 10-20); A's KV arrives at 11 (TTFT 11), its last token at 29; B's hand-off
// (t=21) waits for A's slot: its KV is pulled at 29 (TTFT 29), last token 47.
BOOST_AUTO_TEST_CASE(a_full_decode_worker_delays_the_first_token) {
  auto r = one_to_one_run(1, {{0, 100, 10}, {0, 100, 10}});
  BOOST_TEST(r.completed == 2u);
  BOOST_TEST(r.ttft_ms == 29.0);
  BOOST_TEST(r.mean_ttft_ms == 20.0);
  BOOST_TEST(r.itl_ms == 2.0);
  BOOST_TEST(r.output_tokens_per_s == 20 / 0.047, boost::test_tools::tolerance(1e-9));
}

// A free slot: B's hand-off (prefill 15-25, at 26) lands in the middle of a
// decode step of A's (25-27), so its first token leaves at 26 (TTFT 11, as
// A's), and its second with the next step, at 29 (a gap of 3).
BOOST_AUTO_TEST_CASE(a_hand_off_mid_step_sends_the_first_token_at_once) {
  auto r = one_to_one_run(2, {{0, 100, 20}, {15, 100, 3}});
  BOOST_TEST(r.mean_ttft_ms == 11.0);
  BOOST_TEST(r.itl_ms == 3.0);
  BOOST_TEST(r.completed == 2u);
}

// Four requests with one shared 128-token prompt, far apart: KV routing sends
// the last three to the worker that holds it (127 cached tokens each: the last
// prompt token is always computed); round-robin alternates and hits twice.
BOOST_AUTO_TEST_CASE(kv_routing_follows_the_prefix) {
  auto rs = requests({{0, 128, 2, 7}, {1000, 128, 2, 7}, {2000, 128, 2, 7}, {3000, 128, 2, 7}});
  simulator sim(constant_profile(10, 2), at(90));
  auto kv = sim.run(agg(2, 8192, route::router_mode::kv), rs);
  auto rr = sim.run(agg(2, 8192, route::router_mode::round_robin), rs);
  BOOST_TEST(kv.hit_rate == 3 * 127 / 512.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(rr.hit_rate == 2 * 127 / 512.0, boost::test_tools::tolerance(1e-12));
}

// The router counts a prefix that active requests share once (as
// route::active_sequences): three running requests with one 640-token prompt
// weigh 40 blocks on their worker, under the 80 (40 to prefill, 40 to hold)
// of an idle one, so the fourth joins them too; counted per request, the
// third would already have gone to the idle worker.
BOOST_AUTO_TEST_CASE(kv_routing_counts_shared_active_blocks_once) {
  auto rs = requests({{0, 640, 500, 7}, {100, 640, 500, 7}, {200, 640, 500, 7}, {300, 640, 500, 7}});
  simulator sim(constant_profile(10, 2), at(90));
  auto kv = sim.run(agg(2, 8192, route::router_mode::kv), rs);
  BOOST_TEST(kv.hit_rate == 3 * 639 / 2560.0, boost::test_tools::tolerance(1e-12));
}

// A prefix hit shortens the prefill when step time grows with tokens.
BOOST_AUTO_TEST_CASE(prefix_hits_shorten_prefill) {
  plan::engine_profile p = constant_profile(10, 2);
  p.prefill = {{100, 0, 0, 10}, {1000, 0, 0, 100}}; // 0.1 ms per token
  simulator sim(p, at(100));
  auto r = sim.run(agg(1), requests({{0, 640, 2, 3}, {1000, 640, 2, 3}}));
  BOOST_TEST(r.ttft_ms == 64.0);      // the cold prompt
  BOOST_TEST(r.mean_ttft_ms == 32.05, boost::test_tools::tolerance(1e-9)); // (64 + 0.1) / 2: 639 cached
}

// More KV than the engine has is flagged (the real scheduler would preempt).
BOOST_AUTO_TEST_CASE(kv_overflow_is_flagged) {
  simulator sim(constant_profile(10, 2, 150), at(90));
  auto r = sim.run(agg(1), requests({{0, 100, 60}}));
  BOOST_TEST(r.completed == 1u);
  BOOST_TEST(r.kv_overflow);
  auto fits = sim.run(agg(1), requests({{0, 100, 40}}));
  BOOST_TEST(!fits.kv_overflow);
}

BOOST_AUTO_TEST_CASE(unusable_profile_gives_nothing) {
  plan::engine_profile p;
  simulator sim(p, at(90));
  BOOST_TEST(!sim.usable());
  BOOST_TEST(sim.run(agg(1), requests({{0, 100, 5}})).completed == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
