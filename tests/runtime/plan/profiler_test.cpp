#include "runtime/mocker/mock_executor.hpp"
#include "runtime/plan/profiler.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace dynamo;
using namespace dynamo::plan;

namespace {

// A mocker with its timing model, never sleeping (speedup 0 would turn the
// simulated durations off; the profile reads them, it does not wait for them).
mocker::mocker_config small_mocker() {
  mocker::mocker_config mc;
  mc.block_size = 16;
  mc.num_blocks = 256; // 4096 tokens of KV
  mc.context_length = 2048;
  mc.speedup_ratio = 1.0;
  mc.max_num_seqs = 8;
  return mc;
}

engine_maker maker(const mocker::mocker_config& mc) {
  return [mc] { return mocker::make_engine(mc); };
}

profile_sweep small_sweep() {
  profile_sweep sw;
  sw.isl = {64, 512, 4096};
  sw.prefix_hit = {0.0, 0.5};
  sw.batch = {1, 4, 16};
  sw.context = {128, 1024};
  sw.decode_steps = 4;
  return sw;
}

} // namespace

BOOST_AUTO_TEST_SUITE(profiler_suite)

BOOST_AUTO_TEST_CASE(sweeps_prefill_and_decode_of_the_mocker) {
  auto p = run_profile(maker(small_mocker()), small_sweep());
  if (!p)
    BOOST_FAIL(describe(p.error()));
  BOOST_TEST(p->simulated);
  BOOST_TEST(p->max_kv_tokens == 4096u);
  BOOST_TEST(p->max_num_seqs == 8u);
  // isl 4096 does not fit the 2048 context; 2 prompt lengths x 2 hit shares remain.
  BOOST_REQUIRE_EQUAL(p->prefill.size(), 4u);
  const auto& cold64 = p->prefill[0];
  const auto& warm64 = p->prefill[1];
  const auto& cold512 = p->prefill[2];
  const auto& warm512 = p->prefill[3];
  BOOST_TEST(cold64.isl == 64u);
  BOOST_TEST(cold64.cached_tokens == 0u);
  BOOST_TEST(warm64.cached_tokens == 32u);   // half of 64: two full blocks
  BOOST_TEST(warm512.cached_tokens == 256u);
  BOOST_TEST(cold512.ms > cold64.ms);        // longer prompts take longer
  BOOST_TEST(warm512.ms < cold512.ms);       // cached tokens are not recomputed
  // Decode: batch 16 exceeds max_num_seqs 8; batch 4 x 1031 tokens exceeds 4096.
  BOOST_REQUIRE_EQUAL(p->decode.size(), 3u);
  BOOST_TEST(p->decode[0].batch == 1u);
  BOOST_TEST(p->decode[0].context == 128u);
  BOOST_TEST(p->decode[1].batch == 4u);
  BOOST_TEST(p->decode[1].step_ms > p->decode[0].step_ms);
  for (const auto& d : p->decode)
    BOOST_TEST(d.step_ms > 0.0);
  BOOST_TEST(p->decode[2].batch == 1u);
  BOOST_TEST(p->decode[2].context == 1024u);
  BOOST_TEST(p->decode[2].step_ms > p->decode[0].step_ms); // longer context, slower step
  BOOST_TEST(p->skipped.size() == 4u); // isl 4096, batch 16 at both contexts, batch 4 at 1024
}

// A batch whose prompts take more steps to prefill than the measured decode
// steps: the first requests keep decoding until the batch is full (they used
// to finish first: "no full step measured", e.g. the mocker's default pool at
// batch 64, context 2048).
BOOST_AUTO_TEST_CASE(a_batch_prefilled_over_many_steps_is_measured_full) {
  auto mc = small_mocker();
  mc.max_num_batched_tokens = 256;
  profile_sweep sw;
  sw.isl = {64};
  sw.prefix_hit = {0.0};
  sw.batch = {8};
  sw.context = {256}; // 8 steps of prefill, 2 measured decode steps
  sw.decode_steps = 2;
  auto p = run_profile(maker(mc), sw);
  if (!p)
    BOOST_FAIL(describe(p.error()));
  BOOST_TEST_REQUIRE(p->decode.size() == 1u);
  BOOST_TEST(p->decode[0].batch == 8u);
  BOOST_TEST(p->decode[0].step_ms > 0.0);
}

// --mixed: a step that prefills a 64-token chunk beside the batch costs the
// mocker more than the batch's decode step alone; a batch at max_num_seqs
// (no slot for the chunk's prompt) is skipped.
BOOST_AUTO_TEST_CASE(mixed_steps_are_timed_beside_each_decode_point) {
  auto mc = small_mocker();
  profile_sweep sw;
  sw.isl = {64};
  sw.prefix_hit = {0.0};
  sw.batch = {2, 8};
  sw.context = {128};
  sw.mixed_chunk = {64};
  auto p = run_profile(maker(mc), sw);
  if (!p)
    BOOST_FAIL(describe(p.error()));
  BOOST_TEST_REQUIRE(p->mixed.size() == 1u);
  const auto& m = p->mixed[0];
  BOOST_TEST(m.batch == 2u);
  BOOST_TEST(m.context == 128u);
  BOOST_TEST(m.prefill_tokens == 64u);
  BOOST_TEST(m.decode_ms > 0.0);
  BOOST_TEST(m.step_ms > m.decode_ms);
  BOOST_TEST(p->skipped.back().starts_with("mixed batch 8 context 128 chunk 64: does not fit"));
  auto back = profile_from_json(nlohmann::json::parse(to_json(*p).dump()));
  BOOST_REQUIRE(back);
  BOOST_TEST(back->mixed.at(0).step_ms == m.step_ms);
}

// profile_sweep::budget_s: a phase's first point always runs; a later one
// runs while its predicted seconds (work x the dearest seconds per work unit
// measured) still end by the phase's end.
BOOST_AUTO_TEST_CASE(a_phase_budget_predicts_from_the_dearest_point) {
  phase_budget b(10.0);
  BOOST_TEST(b.fits(1e9, 50.0)); // nothing measured yet: the first point runs
  b.record(100, 1.0);            // 0.01 s per unit
  b.record(100, 0.5);            // cheaper points do not lower the rate
  BOOST_TEST(b.predict(300) == 3.0);
  BOOST_TEST(b.fits(300, 7.0));  // ends at 10.0
  BOOST_TEST(!b.fits(301, 7.0)); // would end past it
  BOOST_TEST(phase_budget(0).fits(1e12, 1e9)); // 0: no limit
}

// A budget far too small for the sweep: each phase measures its first point
// and lists the rest as over the budget; without a budget all of them run.
BOOST_AUTO_TEST_CASE(a_sweep_over_its_time_budget_measures_each_phases_first_point) {
  auto sw = small_sweep();
  sw.mixed_chunk = {32};
  auto all = run_profile(maker(small_mocker()), sw);
  if (!all)
    BOOST_FAIL(describe(all.error()));
  sw.budget_s = 1e-6;
  auto p = run_profile(maker(small_mocker()), sw);
  if (!p)
    BOOST_FAIL(describe(p.error()));
  BOOST_TEST(all->prefill.size() == 4u);
  BOOST_TEST(all->decode.size() == 3u);
  BOOST_TEST(all->mixed.size() == 3u);
  BOOST_TEST_REQUIRE(p->prefill.size() == 1u);
  BOOST_TEST(p->prefill[0].isl == 64u);
  BOOST_TEST_REQUIRE(p->decode.size() == 1u);
  BOOST_TEST(p->decode[0].batch == 1u);
  BOOST_TEST_REQUIRE(p->mixed.size() == 1u);
  size_t over = 0;
  for (const auto& s : p->skipped)
    over += s.find("over the time budget") != std::string::npos;
  BOOST_TEST(over == 3u + 2u + 2u);
  BOOST_TEST(p->skipped.size() == all->skipped.size() + over);
}

// dynamo-profile --handoff on a slow engine: prefill 4 ms per token, decode
// 20 ms at batch 1 and 100 at 16 (max_num_seqs 16: batch 64 is dropped).
// Budget 120 s (60 per half): the hand-offs keep 256 and 1024 (24 x 5,160 ms
// = 124 s), halve to 128/512 (62.4 s), then 64/256 (31.7 s); the batches
// take 25.1 s and keep their sizes. Budget 40: prompts 32/128 (16.3 s),
// batch prompts 128 tokens (16.4 s). A fast engine keeps what it asked for.
BOOST_AUTO_TEST_CASE(the_handoff_probe_is_scaled_to_a_slow_engine) {
  engine_profile slow;
  slow.max_num_seqs = 16;
  slow.prefill = {{100, 0.0, 0, 400.0}, {1000, 0.0, 0, 4000.0}};
  slow.decode = {{1, 100, 20.0}, {16, 100, 100.0}};
  const probe_sizes want;
  auto a = fit_probe(slow, want, 120);
  BOOST_TEST(a.isl == (std::vector<uint32_t>{64, 256}), boost::test_tools::per_element());
  BOOST_TEST(a.requests == 10u);
  BOOST_TEST(a.batch == (std::vector<uint32_t>{1, 16}), boost::test_tools::per_element());
  BOOST_TEST(a.batch_isl == 256u);
  BOOST_TEST(a.batch_osl == 64u);
  auto b = fit_probe(slow, want, 40);
  BOOST_TEST(b.isl == (std::vector<uint32_t>{32, 128}), boost::test_tools::per_element());
  BOOST_TEST(b.batch_isl == 128u);
  BOOST_TEST(b.batch == (std::vector<uint32_t>{1, 16}), boost::test_tools::per_element());

  engine_profile fast = slow; // 1,000x faster
  fast.max_num_seqs = 64;
  for (auto& x : fast.prefill)
    x.ms /= 1000;
  for (auto& x : fast.decode)
    x.step_ms /= 1000;
  auto f = fit_probe(fast, want, 120);
  BOOST_TEST(f.isl == want.isl, boost::test_tools::per_element());
  BOOST_TEST(f.batch == want.batch, boost::test_tools::per_element());
  BOOST_TEST(f.requests == want.requests);
  BOOST_TEST(f.batch_isl == want.batch_isl);
}

BOOST_AUTO_TEST_CASE(decode_points_that_do_not_fit_the_kv_cache_are_skipped) {
  auto mc = small_mocker();
  mc.num_blocks = 64; // 1024 tokens
  auto sw = small_sweep();
  sw.isl = {64};
  sw.prefix_hit = {0.0};
  sw.batch = {1, 4};
  sw.context = {512};
  auto p = run_profile(maker(mc), sw);
  BOOST_REQUIRE(p);
  BOOST_REQUIRE_EQUAL(p->decode.size(), 1u); // 4 x 519 > 1024
  BOOST_REQUIRE_EQUAL(p->skipped.size(), 1u);
  BOOST_TEST(p->skipped[0].starts_with("decode batch 4 context 512: does not fit"));
}

BOOST_AUTO_TEST_CASE(the_profile_round_trips_through_json) {
  engine_profile p;
  p.engine = "cpu";
  p.model = "m";
  p.max_kv_tokens = 4096;
  p.max_num_seqs = 8;
  p.max_num_batched_tokens = 256;
  p.max_model_len = 2048;
  p.prefill = {{128, 0.5, 64, 12.5}};
  p.decode = {{4, 512, 3.25}};
  p.skipped = {"x"};
  p.block_size = 32;
  p.threads = 2;
  auto back = profile_from_json(nlohmann::json::parse(to_json(p).dump()));
  BOOST_REQUIRE(back);
  BOOST_TEST(back->engine == "cpu");
  BOOST_TEST(back->block_size == 32u);
  BOOST_TEST(back->threads == 2u);
  BOOST_TEST(back->prefill.at(0).cached_tokens == 64u);
  BOOST_TEST(back->prefill.at(0).ms == 12.5);
  BOOST_TEST(back->decode.at(0).step_ms == 3.25);
  BOOST_TEST(back->skipped.at(0) == "x");
  BOOST_TEST(!back->handoff); // a profile without the probe (every older file) loads without one
  p.handoff = linear_cost{1.5, 0.25, {{256, 20, 27.5}}};
  auto with = profile_from_json(nlohmann::json::parse(to_json(p).dump()));
  BOOST_REQUIRE(with);
  BOOST_REQUIRE(with->handoff);
  BOOST_TEST(with->handoff->fixed_ms == 1.5);
  BOOST_TEST(with->handoff->per_unit_ms == 0.25);
  BOOST_TEST(to_json(p)["handoff"]["per_block_ms"] == 0.25);
  BOOST_TEST(with->handoff->points.at(0).x == 256u);
  BOOST_TEST(with->handoff->points.at(0).measured_ms == 27.5);
  BOOST_TEST(!with->step_overhead);
  p.step_overhead = linear_cost{0.5, 0.03, {{16, 9.25, 10.5}}};
  auto both = profile_from_json(nlohmann::json::parse(to_json(p).dump()));
  BOOST_REQUIRE(both);
  BOOST_REQUIRE(both->step_overhead);
  BOOST_TEST(both->step_overhead->fixed_ms == 0.5);
  BOOST_TEST(both->step_overhead->per_unit_ms == 0.03);
  BOOST_TEST(to_json(p)["step_overhead"]["per_seq_ms"] == 0.03);
  BOOST_TEST(both->step_overhead->points.at(0).x == 16u);
  BOOST_TEST(both->step_overhead->points.at(0).measured_ms == 10.5);
  BOOST_TEST(!profile_from_json(nlohmann::json::parse(R"({"engine":"cpu"})")));
}

// Extra TTFT 4 ms + 0.25 ms per 16-token block: 10, 20 and 40 blocks (the
// last one partial: 625 tokens are 40 blocks) lie on the line.
BOOST_AUTO_TEST_CASE(the_cost_fit_recovers_a_line_in_kv_blocks) {
  auto blocks = [](uint32_t isl) { return static_cast<double>(kv_blocks(isl, 16)); };
  auto c = fit_cost({{160, 50, 56.5}, {320, 90, 99}, {625, 170, 184}}, blocks);
  BOOST_TEST(c.fixed_ms == 4.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(c.per_unit_ms == 0.25, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(c.points.size() == 3u);
  BOOST_TEST(c.ms(kv_blocks(161, 16)) == 4 + 0.25 * 11, boost::test_tools::tolerance(1e-9));
}

// Steps 0.5 ms + 0.125 ms per sequence longer than the profile's at batches
// 1, 8 and 32 (the baselines differ per batch: only the difference counts).
BOOST_AUTO_TEST_CASE(the_cost_fit_recovers_a_line_in_sequences) {
  auto c = fit_cost({{1, 8, 8.625}, {8, 9, 10.5}, {32, 12, 16.5}}, [](uint32_t b) { return double(b); });
  BOOST_TEST(c.fixed_ms == 0.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(c.per_unit_ms == 0.125, boost::test_tools::tolerance(1e-9));
}

// A falling extra (noise) is no negative per-unit cost: the mean, flat; one
// that would need a negative fixed term keeps a slope through the origin; a
// point faster than its baseline gets no credit.
BOOST_AUTO_TEST_CASE(the_cost_fit_keeps_both_terms_non_negative) {
  auto blocks = [](uint32_t isl) { return static_cast<double>(kv_blocks(isl, 16)); };
  auto flat = fit_cost({{160, 50, 58}, {320, 90, 96}}, blocks);
  BOOST_TEST(flat.per_unit_ms == 0.0);
  BOOST_TEST(flat.fixed_ms == 7.0);
  auto steep = fit_cost({{160, 0, 1}, {320, 0, 6}}, blocks); // line: -4 + 0.5 x blocks
  BOOST_TEST(steep.fixed_ms == 0.0);
  BOOST_TEST(steep.per_unit_ms == (10 * 1 + 20 * 6) / 500.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(fit_cost({{1, 8, 7}}, blocks).ms(1) == 0.0);
  BOOST_TEST(fit_cost({}, blocks).ms(1000) == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// Prefill: 10 ms at 100 tokens, 30 ms at 200. Decode step: 10 + 2 (b - 1) ms at
// context 100 (batches 1 and 4), twice that slope and base at context 300.
engine_profile linear_profile() {
  engine_profile p;
  p.max_kv_tokens = 100000;
  p.max_num_seqs = 64;
  p.max_model_len = 4096;
  p.prefill = {{100, 0.0, 0, 10.0}, {200, 0.0, 0, 30.0}, {200, 0.5, 96, 18.0}};
  p.decode = {{1, 100, 10.0}, {4, 100, 16.0}, {1, 300, 20.0}, {4, 300, 40.0}};
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sla_estimate_suite)

BOOST_AUTO_TEST_CASE(prefill_time_interpolates_and_extrapolates) {
  auto p = linear_profile();
  BOOST_TEST(*prefill_ms_at(p, 150) == 20.0);
  BOOST_TEST(*prefill_ms_at(p, 50) == 5.0);   // proportional below the first point
  BOOST_TEST(*prefill_ms_at(p, 300) == 50.0); // the last segment, extended
  BOOST_TEST(!prefill_ms_at(engine_profile{}, 100));
}

BOOST_AUTO_TEST_CASE(decode_step_time_is_bilinear) {
  auto p = linear_profile();
  BOOST_TEST(*decode_step_ms_at(p, 2, 100) == 12.0);
  BOOST_TEST(std::abs(*decode_step_ms_at(p, 2, 200) - (12.0 + 80.0 / 3) / 2) < 1e-9);
  BOOST_TEST(*decode_step_ms_at(p, 1, 50) == 10.0); // clamped below the first context
}

// A mixed step: prefill + decode, less the decode term of the one sequence a
// profiled prefill already sampled; never below either part.
BOOST_AUTO_TEST_CASE(mixed_step_adds_prefill_and_decode) {
  step_times t(linear_profile());
  BOOST_TEST(t.step_ms(0, 0, 0) == 0.0);
  BOOST_TEST(t.step_ms(150, 0, 0) == 20.0);
  BOOST_TEST(t.step_ms(0, 4, 100) == 16.0);
  BOOST_TEST(t.step_ms(150, 4, 100) == 20.0 + 16.0 - 12.5); // decode(1, 150) = 12.5
  BOOST_TEST(t.step_ms(10, 4, 100) == 16.0);                // 1 + 16 - 10 < 16
  BOOST_TEST(!step_times(engine_profile{}).has_prefill());
}

// A real engine's prompts attend to their own sequence only: two 100-token
// prompts in one step cost about twice one of them, not one 200-token prompt;
// a later chunk costs what the longer prompt costs beyond the shorter.
// Prefill 50 / 120 / 300 ms at 100 / 200 / 400 tokens; the fixed part is
// decode(1) = 10 ms, batch 4 decodes in 16 ms.
BOOST_AUTO_TEST_CASE(a_real_engine_prices_prompt_chunks_per_sequence) {
  engine_profile p;
  p.engine = "cpu";
  p.prefill = {{100, 0.0, 0, 50.0}, {200, 0.0, 0, 120.0}, {400, 0.0, 0, 300.0}};
  p.decode = {{1, 100, 10.0}, {4, 100, 16.0}};
  const step_times t(p);
  step_work two;
  t.add_chunk(two, 0, 100);
  t.add_chunk(two, 0, 100);
  BOOST_TEST(two.prefill_tokens == 200.0);
  BOOST_TEST(two.chunk_ms == 80.0);             // 2 x (50 - 10)
  BOOST_TEST(t.step_ms(two, 0, 0) == 90.0);     // + the fixed part once; prefill_ms(200) is 120
  BOOST_TEST(t.step_ms(two, 4, 100) == 96.0);   // + the decode step
  step_work one;
  t.add_chunk(one, 0, 200);
  BOOST_TEST(t.step_ms(one, 0, 0) == 120.0);    // a lone prompt: its profiled time
  BOOST_TEST(t.step_ms(one, 4, 100) == t.step_ms(200, 4, 100) + 0.0); // 120 - 10 + 16 either way
  step_work later;
  t.add_chunk(later, 200, 100);                 // tokens 200..300: 210 - 120
  BOOST_TEST(t.step_ms(later, 0, 0) == 100.0);  // prefill_ms(100) would be 50
  step_work tiny;
  t.add_chunk(tiny, 0, 10);                     // 5 ms < the fixed part: 0
  BOOST_TEST(tiny.chunk_ms == 0.0);
  BOOST_TEST(t.step_ms(tiny, 4, 100) == 16.0);

  p.engine = "mocker"; // the mocker charges the step's total new tokens
  const step_times m(p);
  step_work total;
  m.add_chunk(total, 0, 100);
  m.add_chunk(total, 0, 100);
  BOOST_TEST(m.step_ms(total, 0, 0) == 120.0);
  BOOST_TEST(m.step_ms(total, 4, 100) == 126.0); // 120 + 16 - decode(1, 200)
}

BOOST_AUTO_TEST_CASE(the_largest_batch_that_meets_itl_sizes_decode) {
  auto p = linear_profile();
  // isl 80, osl 40: context 100; batch 4 steps in 16 ms.
  auto e = estimate_sla(p, {5.0, 16.0}, 80, 40);
  BOOST_REQUIRE(e);
  BOOST_TEST(e->decode_batch == 4u);
  BOOST_TEST(std::abs(e->decode_tokens_per_s - 250.0) < 1e-9);
  BOOST_TEST(e->meets_itl);
  BOOST_TEST(e->prefill_ms == 8.0);
  BOOST_TEST(std::abs(e->prefill_tokens_per_s - 10000.0) < 1e-6);
  BOOST_TEST(!e->meets_ttft); // 8 ms of prefill > the 5 ms target
  auto tight = estimate_sla(p, {50.0, 13.0}, 80, 40); // batch 2: 12 ms
  BOOST_REQUIRE(tight);
  BOOST_TEST(tight->decode_batch == 2u);
  auto impossible = estimate_sla(p, {50.0, 5.0}, 80, 40);
  BOOST_REQUIRE(impossible);
  BOOST_TEST(!impossible->meets_itl);
  BOOST_TEST(impossible->decode_tokens_per_s == 100.0); // sized by batch 1
}

BOOST_AUTO_TEST_SUITE_END()
