#include "runtime/route/active_sequences.hpp"
#include "runtime/route/config.hpp"
#include "runtime/route/selector.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>

using namespace dynamo;
using namespace dynamo::route;

namespace {

candidate_cost cost(uint64_t worker, double prefill_blocks, double decode_blocks,
                    uint64_t tree_size = 0, uint32_t block_size = 16) {
  candidate_cost c;
  c.worker = worker_key{worker, 0};
  c.prefill_tokens = prefill_blocks * block_size;
  c.decode_blocks = decode_blocks;
  c.tree_size = tree_size;
  c.logit = kv_logit(1.0, c.prefill_tokens, block_size, c.decode_blocks);
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kv_cost_selection)

// research/dynamo.md 3.6 (docs/design-docs/router-design.md): weights 1.0,
// (prefill, decode) blocks (8,10), (5,5), (2,9) -> costs 18, 10, 11 -> worker 2.
BOOST_AUTO_TEST_CASE(the_documented_example_picks_the_second_worker) {
  std::array<candidate_cost, 3> c{cost(1, 8, 10), cost(2, 5, 5), cost(3, 2, 9)};
  BOOST_TEST(c[0].logit == 18.0);
  BOOST_TEST(c[1].logit == 10.0);
  BOOST_TEST(c[2].logit == 11.0);
  kv_selector sel(1);
  BOOST_TEST(sel.select(c, 0.0) == 1u);
}

BOOST_AUTO_TEST_CASE(the_overlap_weight_scales_only_the_prefill_term) {
  BOOST_TEST(kv_logit(2.0, 64, 16, 3) == 11.0);
  BOOST_TEST(kv_logit(0.0, 64, 16, 3) == 3.0);
}

BOOST_AUTO_TEST_CASE(timings_price_both_sides_in_one_unit) {
  // A block's prefill costs 0.3 ms, a resident block 0.03 ms per step: one
  // prefill block weighs as ten resident ones. Loading it costs 0.06 ms, so a
  // lower-tier hit saves 0.24 of the 0.3 ms.
  const cost_weights w = weights_from_timing({.prefill_ms_per_block = 0.3, .step_ms_per_block = 0.03,
                                              .onboard_ms_per_block = 0.06});
  BOOST_TEST(w.overlap_score_weight == 10.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(w.lower_tier_weight == 0.8, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(weights_from_timing({0.3, 0.03, 0.6}).lower_tier_weight == 0.0); // dearer than recomputing
  BOOST_TEST(weights_from_timing({0.3, 0.03, 0.0}).lower_tier_weight == 1.0);
}

BOOST_AUTO_TEST_CASE(ties_go_to_the_smallest_tree_then_uniformly_at_random) {
  std::array<candidate_cost, 3> c{cost(1, 1, 1, 50), cost(2, 1, 1, 20), cost(3, 1, 1, 30)};
  kv_selector sel(7);
  for (int i = 0; i < 20; ++i)
    BOOST_TEST(sel.select(c, 0.0) == 1u);
  std::array<candidate_cost, 3> same{cost(1, 1, 1, 5), cost(2, 1, 1, 5), cost(3, 9, 9, 0)};
  std::array<int, 3> hits{};
  for (int i = 0; i < 3000; ++i)
    ++hits[sel.select(same, 0.0)];
  BOOST_TEST(hits[2] == 0);
  BOOST_TEST(hits[0] > 1350); // seeded: a fixed draw, about half each
  BOOST_TEST(hits[1] > 1350);
}

BOOST_AUTO_TEST_CASE(softmax_probabilities_follow_the_normalized_logits) {
  std::array<double, 3> logits{10, 11, 12};
  auto p = softmax_probabilities(logits, 1.0);
  double z = 1 + std::exp(-0.5) + std::exp(-1.0);
  BOOST_TEST(std::abs(p[0] - 1 / z) < 1e-12);
  BOOST_TEST(std::abs(p[1] - std::exp(-0.5) / z) < 1e-12);
  BOOST_TEST(std::abs(p[2] - std::exp(-1.0) / z) < 1e-12);
  std::array<double, 2> flat{4, 4};
  auto u = softmax_probabilities(flat, 0.5);
  BOOST_TEST(u[0] == 0.5);
  BOOST_TEST(u[1] == 0.5);
  // The scale is relative: shifting or scaling the logits changes nothing.
  std::array<double, 3> scaled{100, 110, 120};
  auto q = softmax_probabilities(scaled, 1.0);
  for (size_t i = 0; i < 3; ++i)
    BOOST_TEST(std::abs(q[i] - p[i]) < 1e-12);
}

BOOST_AUTO_TEST_CASE(softmax_sampling_matches_its_distribution) {
  std::array<candidate_cost, 3> c{cost(1, 0, 10), cost(2, 0, 11), cost(3, 0, 12)};
  std::array<double, 3> logits{10, 11, 12};
  auto p = softmax_probabilities(logits, 0.5);
  kv_selector sel(2024);
  std::array<int, 3> hits{};
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    ++hits[sel.select(c, 0.5)];
  for (size_t i = 0; i < 3; ++i)
    BOOST_TEST(std::abs(hits[i] / double(n) - p[i]) < 0.015);
  BOOST_TEST(hits[0] > hits[1]);
  BOOST_TEST(hits[1] > hits[2]);
}

BOOST_AUTO_TEST_CASE(the_same_seed_replays_the_same_choices) {
  std::array<candidate_cost, 4> c{cost(1, 0, 1), cost(2, 0, 2), cost(3, 0, 3), cost(4, 0, 4)};
  kv_selector a(99), b(99);
  for (int i = 0; i < 100; ++i)
    BOOST_TEST(a.select(c, 1.0) == b.select(c, 1.0));
}

BOOST_AUTO_TEST_CASE(round_robin_cycles_and_random_stays_in_range) {
  round_robin_selector rr;
  BOOST_TEST(rr.select(3) == 0u);
  BOOST_TEST(rr.select(3) == 1u);
  BOOST_TEST(rr.select(3) == 2u);
  BOOST_TEST(rr.select(3) == 0u);
  BOOST_TEST(rr.select(2) == 1u);
  random_selector rnd(5);
  std::array<int, 4> hits{};
  for (int i = 0; i < 400; ++i)
    ++hits[rnd.select(4)];
  for (int h : hits)
    BOOST_TEST(h > 60);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(active_sequence_load)

BOOST_AUTO_TEST_CASE(booking_counts_uncached_prefill_tokens_and_blocks) {
  active_sequences s(4);
  const worker_key w{1, 0};
  std::vector<uint64_t> seq{101, 102, 103};
  BOOST_TEST(s.add_request("a", w, seq, 12, 4));
  BOOST_TEST(s.active_prefill_tokens(w) == 8u); // 12 - 1 block of 4 cached
  BOOST_TEST(s.active_decode_blocks(w) == 3u);
  BOOST_TEST(!s.add_request("a", w, seq, 12, 4)); // duplicate id
  BOOST_TEST(s.mark_prefill_completed("a"));
  BOOST_TEST(!s.mark_prefill_completed("a"));
  BOOST_TEST(s.active_prefill_tokens(w) == 0u);
  BOOST_TEST(s.active_decode_blocks(w) == 3u);
  BOOST_TEST(s.free("a"));
  BOOST_TEST(!s.free("a"));
  BOOST_TEST(s.active_decode_blocks(w) == 0u);
  BOOST_TEST(s.size() == 0u);
}

BOOST_AUTO_TEST_CASE(blocks_shared_by_active_requests_count_once) {
  active_sequences s(4);
  const worker_key w{1, 0};
  std::vector<uint64_t> a{1, 2, 3}, b{1, 2, 4, 5};
  BOOST_TEST(s.add_request("a", w, a, 12, 0));
  BOOST_TEST(s.shared_prefix_blocks(w, b) == 2u);
  BOOST_TEST(s.add_request("b", w, b, 16, 0));
  BOOST_TEST(s.active_decode_blocks(w) == 5u); // 1,2,3,4,5
  BOOST_TEST(s.active_prefill_tokens(w) == 28u);
  BOOST_TEST(s.free("a"));
  BOOST_TEST(s.active_decode_blocks(w) == 4u); // 1,2 still held by b
  BOOST_TEST(s.shared_prefix_blocks(w, a) == 2u);
  BOOST_TEST(s.shared_prefix_blocks(worker_key{2, 0}, a) == 0u);
}

BOOST_AUTO_TEST_CASE(a_partial_tail_block_counts_and_is_never_shared) {
  active_sequences s(4);
  const worker_key w{1, 0};
  std::vector<uint64_t> full{1, 2};
  BOOST_TEST(s.add_request("a", w, full, 10, 0, false)); // 2 full blocks + 2 tokens
  BOOST_TEST(s.add_request("b", w, full, 10, 0, false));
  BOOST_TEST(s.active_decode_blocks(w) == 4u); // shared 1,2 + two private tails
  BOOST_TEST(s.active_prefill_tokens(w) == 0u); // prefill tracking off
}

BOOST_AUTO_TEST_CASE(removing_a_worker_drops_its_bookings) {
  active_sequences s(4);
  std::vector<uint64_t> h{1};
  BOOST_TEST(s.add_request("a", worker_key{1, 0}, h, 4, 0));
  BOOST_TEST(s.add_request("b", worker_key{1, 1}, h, 4, 0));
  BOOST_TEST(s.add_request("c", worker_key{2, 0}, h, 4, 0));
  BOOST_TEST(s.remove_worker(1) == 2u);
  BOOST_TEST(s.size() == 1u);
  BOOST_TEST(s.active_decode_blocks(worker_key{1, 0}) == 0u);
  BOOST_TEST(!s.free("a"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(router_configuration)

BOOST_AUTO_TEST_CASE(defaults_are_dynamos) {
  kv_router_config c;
  BOOST_TEST(c.overlap_score_weight == 1.0);
  BOOST_TEST(c.router_temperature == 0.0);
  BOOST_TEST(c.use_kv_events);
  BOOST_TEST(c.router_track_active_blocks);
  BOOST_TEST(c.router_assume_kv_reuse);
  BOOST_TEST(c.router_track_prefill_tokens);
  BOOST_TEST(!c.router_replica_sync);
  BOOST_TEST(c.router_max_tree_size == 1048576u);
  BOOST_TEST(c.router_prune_target_ratio == 0.8);
  BOOST_TEST(c.router_ttl_secs == 120.0);
  BOOST_TEST(c.router_queue_threshold == 4.0);
  BOOST_TEST(c.router_snapshot_threshold == 1000000u);
  BOOST_TEST(c.router_event_threads == 4u);
  BOOST_TEST((c.router_queue_policy == queue_policy::fcfs));
  BOOST_TEST(bool(c.validate()));
}

BOOST_AUTO_TEST_CASE(flags_set_fields_and_bad_values_name_the_flag) {
  kv_router_config c;
  BOOST_TEST(bool(c.set("--kv-overlap-score-weight", "0.5")));
  BOOST_TEST(bool(c.set("--router-temperature", "1.5")));
  BOOST_TEST(bool(c.set("--no-kv-events", "")));
  BOOST_TEST(bool(c.set("--router-track-prefill-tokens", "false")));
  BOOST_TEST(bool(c.set("--no-router-assume-kv-reuse", "")));
  BOOST_TEST(bool(c.set("--router-max-tree-size", "1000")));
  BOOST_TEST(c.overlap_score_weight == 0.5);
  BOOST_TEST(c.router_temperature == 1.5);
  BOOST_TEST(!c.use_kv_events);
  BOOST_TEST(!c.router_track_prefill_tokens);
  BOOST_TEST(!c.router_assume_kv_reuse);
  BOOST_TEST(c.router_max_tree_size == 1000u);
  auto bad = c.set("--router-temperature", "warm");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(code_of(bad.error()) == errc::config_error);
  BOOST_TEST(message_of(bad.error()).starts_with("--router-temperature"));
  BOOST_TEST(!c.set("--router-fancy", "1"));
  BOOST_TEST(!kv_router_flags().empty());
  // A value flag refuses "", which is how the command line tells it from a
  // switch (`--router-queue-policy lcfs` used to be read as a switch).
  BOOST_TEST(bool(c.set("--router-queue-policy", "lcfs")));
  BOOST_TEST((c.router_queue_policy == queue_policy::lcfs));
  BOOST_TEST(!c.set("--router-queue-policy", ""));
  auto lifo = c.set("--router-queue-policy", "lifo");
  BOOST_REQUIRE(!lifo);
  BOOST_TEST(message_of(lifo.error()) == "--router-queue-policy: 'lifo': must be fcfs, lcfs or wspt");
  BOOST_TEST((c.router_queue_policy == queue_policy::lcfs)); // unchanged by the refused value
  for (const auto& f : kv_router_flags()) {
    kv_router_config probe;
    bool is_switch = static_cast<bool>(probe.set(std::string{f.name}, ""));
    bool says_boolean = std::string_view{f.help}.find("(true") != std::string_view::npos ||
                        std::string_view{f.help}.find("(false") != std::string_view::npos;
    BOOST_TEST(is_switch == says_boolean, f.name);
  }
}

BOOST_AUTO_TEST_CASE(validation_rejects_impossible_combinations) {
  kv_router_config c;
  c.router_temperature = -1;
  BOOST_TEST(!c.validate());
  c = {};
  c.router_track_output_blocks = true;
  c.router_track_active_blocks = false;
  BOOST_TEST(!c.validate());
}

BOOST_AUTO_TEST_CASE(queue_policies_and_cost_models_parse_from_their_flag_values) {
  for (auto p : {queue_policy::fcfs, queue_policy::lcfs, queue_policy::wspt}) {
    auto back = parse_queue_policy(to_string(p));
    BOOST_REQUIRE(back);
    BOOST_TEST((*back == p));
  }
  BOOST_TEST(to_string(queue_policy::wspt) == "wspt");
  for (auto m : {cost_model::dynamo, cost_model::timing}) {
    auto back = parse_cost_model(to_string(m));
    BOOST_REQUIRE(back);
    BOOST_TEST((*back == m));
  }
  BOOST_TEST(to_string(cost_model::timing) == "timing");
  auto bad = parse_cost_model("");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(code_of(bad.error()) == errc::config_error);
  BOOST_TEST(message_of(bad.error()) == "--router-cost: '': must be dynamo or timing");
}

BOOST_AUTO_TEST_CASE(dynamo_flags_without_effect_are_named_when_set) {
  kv_router_config c;
  BOOST_TEST(c.inert_settings().empty());
  BOOST_REQUIRE(c.set("--router-queue-threshold", "2"));
  BOOST_REQUIRE(c.set("--router-queue-policy", "wspt"));
  BOOST_REQUIRE(c.set("--router-ttl", "60"));
  BOOST_REQUIRE(c.set("--kv-overlap-score-weight", "2")); // acted on: not named
  BOOST_TEST(c.inert_settings() == (std::vector<std::string>{"--router-ttl", "--router-queue-threshold",
                                                             "--router-queue-policy"}),
             boost::test_tools::per_element());
  kv_router_config d;
  BOOST_REQUIRE(d.set("--router-replica-sync", "true"));
  BOOST_REQUIRE(d.set("--router-reset-states", "true"));
  BOOST_TEST(d.inert_settings() == (std::vector<std::string>{"--router-replica-sync", "--router-reset-states"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(router_modes_parse_from_their_flag_values) {
  BOOST_TEST((*parse_router_mode("kv") == router_mode::kv));
  BOOST_TEST((*parse_router_mode("round-robin") == router_mode::round_robin));
  BOOST_TEST((*parse_router_mode("random") == router_mode::random));
  BOOST_TEST(!parse_router_mode("power-of-two"));
  BOOST_TEST(to_string(router_mode::round_robin) == "round-robin");
}

BOOST_AUTO_TEST_SUITE_END()
