#include "runtime/plan/planner.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::plan;
using config::worker_role;

namespace {

// interval 1000 ms, replicas in [1, 4], moving average over 3 intervals.
config::planner_config base_config() {
  config::planner_config c;
  c.enabled = true;
  c.interval_ms = 1000;
  c.min_replicas = 1;
  c.max_replicas = 4;
  c.predictor = "moving_average";
  c.predictor_window = 3;
  c.pending_timeout_ms = 5000;
  c.scale_down_stabilization_ms = 0; // its own test below
  return c;
}

pool_spec pool(std::string name, worker_role role, uint32_t replicas) {
  pool_spec p;
  p.name = std::move(name);
  p.role = role;
  p.model = "m";
  p.replicas = replicas;
  p.prefill_capacity_tokens = 1000;
  return p;
}

planner make(config::planner_config c, std::vector<pool_spec> pools) {
  auto p = planner::create(std::move(c), std::move(pools));
  if (!p)
    BOOST_FAIL(describe(p.error()));
  return std::move(*p);
}

protocol::load_metrics load(uint64_t worker, float kv, uint32_t waiting = 0, uint32_t prefill = 0) {
  protocol::load_metrics m;
  m.worker_id = worker;
  m.kv_usage = kv;
  m.num_waiting = waiting;
  m.active_prefill_tokens = prefill;
  return m;
}

// One interval ending at `now`: every worker reports `kv` twice inside it.
/// SLA mode with targets TTFT 100 ms and ITL 16 ms, a constant predictor.
config::planner_config sla_config() {
  auto c = base_config();
  c.mode = "sla";
  c.predictor = "constant";
  c.ttft_ms = 100;
  c.itl_ms = 16;
  return c;
}

/// A decode pool with a profile whose step is 10 + 2 (b - 1) ms at context 100:
/// with ITL 16 ms, batch 4 and 250 output tokens/s per engine.
pool_spec sla_decode_pool() {
  auto spec = pool("dec", worker_role::decode, 1);
  engine_profile prof;
  prof.max_num_seqs = 64;
  prof.max_kv_tokens = 100000;
  prof.prefill = {{100, 0.0, 0, 10.0}};
  prof.decode = {{1, 100, 10.0}, {4, 100, 16.0}};
  spec.profile = prof;
  return spec;
}

step_result tick(planner& p, const std::string& pool, std::vector<uint64_t> workers, float kv,
                 int64_t now, uint32_t waiting = 0) {
  for (auto w : workers) {
    p.observe_load(pool, load(w, kv, waiting), now - 900);
    p.observe_load(pool, load(w, kv, waiting), now - 100);
  }
  return p.step(now);
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_suite)

BOOST_AUTO_TEST_CASE(sustained_high_usage_scales_up_a_single_spike_does_not) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 2)});
  p.set_instances("dec", 2);
  // Moving average of 3: 0.4, 0.4, 0.95 -> 0.583 (a spike: hold), then 0.767, then 0.95.
  BOOST_TEST(tick(p, "dec", {1, 2}, 0.4f, 1000).decisions.empty());
  BOOST_TEST(tick(p, "dec", {1, 2}, 0.4f, 2000).decisions.empty());
  auto spike = tick(p, "dec", {1, 2}, 0.95f, 3000);
  BOOST_TEST(spike.decisions.empty());
  BOOST_TEST(spike.pools[0].verdict == "hold: within thresholds");
  BOOST_TEST(tick(p, "dec", {1, 2}, 0.95f, 4000).decisions.empty());
  auto up = tick(p, "dec", {1, 2}, 0.95f, 5000);
  BOOST_REQUIRE_EQUAL(up.decisions.size(), 1u);
  const auto& d = up.decisions[0];
  BOOST_TEST(d.pool == "dec");
  BOOST_TEST(d.current == 2u);
  BOOST_TEST(d.target == 3u);
  BOOST_TEST(d.observed == 2u);
  BOOST_TEST(d.reason == "scale up: predicted kv_usage 0.950 > 0.800");
  BOOST_TEST(up.decision_id == 1u);
  BOOST_TEST(p.targets().at("dec") == 3u);
}

BOOST_AUTO_TEST_CASE(the_constant_predictor_follows_the_spike) {
  auto c = base_config();
  c.predictor = "constant";
  auto p = make(c, {pool("dec", worker_role::decode, 2)});
  BOOST_TEST(tick(p, "dec", {1, 2}, 0.4f, 1000).decisions.empty());
  auto spike = tick(p, "dec", {1, 2}, 0.95f, 2000);
  BOOST_REQUIRE_EQUAL(spike.decisions.size(), 1u);
  BOOST_TEST(spike.decisions[0].target == 3u);
}

BOOST_AUTO_TEST_CASE(scales_down_only_when_every_worker_is_low) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 3)});
  p.set_instances("dec", 3);
  // Worker 1 at 0.5, workers 2 and 3 idle: the mean (0.233) is low, but not every worker.
  p.observe_load("dec", load(1, 0.5f), 500);
  p.observe_load("dec", load(2, 0.1f), 500);
  p.observe_load("dec", load(3, 0.1f), 500);
  auto mixed = p.step(1000);
  BOOST_TEST(mixed.decisions.empty());
  BOOST_TEST(mixed.pools[0].engines == 3u);
  BOOST_TEST(mixed.pools[0].verdict == "hold: within thresholds");
  auto low = tick(p, "dec", {1, 2, 3}, 0.1f, 2000);
  BOOST_REQUIRE_EQUAL(low.decisions.size(), 1u);
  BOOST_TEST(low.decisions[0].target == 2u);
  BOOST_TEST(low.decisions[0].reason ==
             "scale down: all 3 workers below kv_usage 0.300 and num_waiting 0.200");
}

BOOST_AUTO_TEST_CASE(a_silent_worker_blocks_scale_down) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 3)});
  p.set_instances("dec", 3);
  // Two of the three live workers report idle; the third is not known to be idle.
  auto r = tick(p, "dec", {1, 2}, 0.0f, 1000);
  BOOST_TEST(r.decisions.empty());
  BOOST_TEST(r.pools[0].workers == 2u);
  BOOST_TEST(r.pools[0].verdict == "hold: only 2 of 3 workers reported in the window");
  auto all = tick(p, "dec", {1, 2, 3}, 0.0f, 2000); // idle workers report too (a heartbeat)
  BOOST_REQUIRE_EQUAL(all.decisions.size(), 1u);
  BOOST_TEST(all.decisions[0].target == 2u);
}

BOOST_AUTO_TEST_CASE(a_silent_worker_does_not_block_scale_up) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 3)});
  p.set_instances("dec", 3);
  auto r = tick(p, "dec", {1}, 0.95f, 1000);
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u);
  BOOST_TEST(r.decisions[0].target == 4u);
}

BOOST_AUTO_TEST_CASE(a_restarted_planner_starts_from_the_observed_replicas) {
  // The config says 1; a previous planner scaled the pool to 3 and exited.
  auto p = make(base_config(), {pool("dec", worker_role::decode, 1)});
  p.set_instances("dec", 3);
  auto busy = tick(p, "dec", {1, 2, 3}, 0.5f, 1000);
  BOOST_TEST(busy.decisions.empty());
  BOOST_TEST(busy.pools[0].target == 3u);
  BOOST_TEST(p.targets().at("dec") == 3u);
  auto idle = tick(p, "dec", {1, 2, 3}, 0.0f, 2000);
  BOOST_REQUIRE_EQUAL(idle.decisions.size(), 1u);
  BOOST_TEST(idle.decisions[0].current == 3u); // not 1 -> ...: one step down from what runs
  BOOST_TEST(idle.decisions[0].target == 2u);
}

BOOST_AUTO_TEST_CASE(workers_still_starting_do_not_shrink_the_target) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 3), pool("pre", worker_role::prefill, 1)});
  p.set_instances("dec", 1); // two of three still loading their model
  p.set_instances("pre", 1);
  p.observe_load("pre", load(9, 0, 0, 5000), 500);
  auto r = p.step(1000);
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u); // prefill scales up ...
  BOOST_TEST(r.decisions[0].pool == "pre");
  BOOST_TEST(p.targets().at("dec") == 3u);     // ... and the record still says 3 for dec
}

BOOST_AUTO_TEST_CASE(a_queue_alone_scales_up_and_blocks_scale_down) {
  auto p = make(base_config(), {pool("agg", worker_role::aggregated, 2)});
  auto queued = tick(p, "agg", {1, 2}, 0.1f, 1000, /*waiting=*/8);
  BOOST_REQUIRE_EQUAL(queued.decisions.size(), 1u);
  BOOST_TEST(queued.decisions[0].reason == "scale up: predicted num_waiting 8.000 > 5.000");

  auto q = make(base_config(), {pool("agg", worker_role::aggregated, 2)});
  auto some = tick(q, "agg", {1, 2}, 0.1f, 1000, /*waiting=*/1); // low KV, but a queue
  BOOST_TEST(some.decisions.empty());
}

BOOST_AUTO_TEST_CASE(prefill_pools_scale_on_prefill_tokens) {
  auto p = make(base_config(), {pool("pre", worker_role::prefill, 1), pool("dec", worker_role::decode, 1)});
  // Prefill load = active_prefill_tokens / 1000; KV usage is irrelevant for prefill pools.
  p.observe_load("pre", load(1, 0.99f, 0, 1500), 500);
  p.observe_load("dec", load(2, 0.5f, 0, 1500), 500);
  auto r = p.step(1000);
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u);
  BOOST_TEST(r.decisions[0].pool == "pre");
  BOOST_TEST(config::to_string(r.decisions[0].role) == "prefill");
  BOOST_TEST(r.decisions[0].reason == "scale up: predicted prefill_load 1.500 > 1.000");
  BOOST_TEST(r.pools[1].verdict == "hold: within thresholds");
}

BOOST_AUTO_TEST_CASE(only_samples_inside_the_interval_count) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 2)});
  p.observe_load("dec", load(1, 0.99f), 0); // exactly one interval old at t=1000: out
  auto r = p.step(1000);
  BOOST_TEST(r.decisions.empty());
  BOOST_TEST(r.pools[0].engines == 0u);
  BOOST_TEST(r.pools[0].verdict == "hold: no load metrics in the window");
}

BOOST_AUTO_TEST_CASE(no_new_action_while_one_is_pending) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 1)});
  p.set_instances("dec", 1);
  BOOST_TEST(tick(p, "dec", {1}, 0.9f, 1000).decisions.size() == 1u); // 1 -> 2
  auto held = tick(p, "dec", {1}, 0.9f, 2000);
  BOOST_TEST(held.decisions.empty());
  BOOST_TEST(held.pools[0].pending);
  BOOST_TEST(held.pools[0].verdict == "pending: observed 1 replicas, target 2");
  p.set_instances("dec", 2); // the orchestrator applied it
  auto next = tick(p, "dec", {1, 2}, 0.9f, 3000);
  BOOST_REQUIRE_EQUAL(next.decisions.size(), 1u);
  BOOST_TEST(next.decisions[0].current == 2u);
  BOOST_TEST(next.decisions[0].target == 3u);
  BOOST_TEST(next.decision_id == 2u);
}

BOOST_AUTO_TEST_CASE(a_pending_action_times_out) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 1)}); // timeout 5000 ms
  BOOST_TEST(tick(p, "dec", {1}, 0.9f, 1000).decisions.size() == 1u);
  for (int64_t t = 2000; t <= 5000; t += 1000)
    BOOST_TEST(tick(p, "dec", {1}, 0.9f, t).decisions.empty());
  auto retry = tick(p, "dec", {1}, 0.9f, 6000); // 5000 ms after the decision
  BOOST_REQUIRE_EQUAL(retry.decisions.size(), 1u);
  BOOST_TEST(retry.decisions[0].current == 2u);
  BOOST_TEST(retry.decisions[0].target == 3u);
  BOOST_TEST(retry.decisions[0].observed == 0u);
}

BOOST_AUTO_TEST_CASE(min_and_max_replicas_clamp) {
  auto p = make(base_config(), {pool("big", worker_role::decode, 6), pool("one", worker_role::decode, 1)});
  p.set_instances("big", 6);
  p.set_instances("one", 1);
  auto r = tick(p, "one", {7}, 0.1f, 1000); // "one" is idle but already at min_replicas
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u); // the config's 6 is above max_replicas 4
  BOOST_TEST(r.decisions[0].pool == "big");
  BOOST_TEST(r.decisions[0].target == 4u);
  BOOST_TEST(r.decisions[0].reason == "hold: no load metrics in the window (max_replicas 4)");
  BOOST_TEST(r.pools[1].verdict ==
             "scale down: all 1 workers below kv_usage 0.300 and num_waiting 0.200 (min_replicas 1)");
  BOOST_TEST(r.pools[1].target == 1u);

  p.set_instances("big", 4);
  auto at_max = tick(p, "big", {1, 2, 3, 4}, 0.99f, 2000);
  BOOST_TEST(at_max.decisions.empty());
  BOOST_TEST(at_max.pools[0].verdict == "scale up: predicted kv_usage 0.990 > 0.800 (max_replicas 4)");
}

BOOST_AUTO_TEST_CASE(the_gpu_budget_splits_growth_prefill_first) {
  auto c = base_config();
  c.max_gpu_budget = 5;
  auto p = make(c, {pool("dec", worker_role::decode, 2), pool("pre", worker_role::prefill, 2)});
  p.observe_load("pre", load(1, 0, 0, 2000), 500);
  p.observe_load("dec", load(2, 0.9f), 500);
  auto r = p.step(1000);
  // Both want 3 (6 GPUs > 5): prefill floor(3 * 5/6) = 2 keeps its 2, decode gets 3.
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u);
  BOOST_TEST(r.decisions[0].pool == "dec");
  BOOST_TEST(r.decisions[0].target == 3u);
  BOOST_TEST(r.pools[1].target == 2u);
  BOOST_TEST(r.pools[1].verdict ==
             "scale up: predicted prefill_load 2.000 > 1.000 (GPU budget 5: 2 instead of 3)");
}

BOOST_AUTO_TEST_CASE(a_budget_below_the_minimums_is_a_config_error) {
  auto c = base_config();
  c.max_gpu_budget = 3;
  c.min_replicas = 2;
  auto p = planner::create(c, {pool("a", worker_role::decode, 2), pool("b", worker_role::prefill, 2)});
  BOOST_REQUIRE(!p);
  BOOST_TEST(message_of(p.error()) ==
             "planner.max_gpu_budget: 3 GPUs cannot hold min_replicas (2) of every pool (4 GPUs)");
  auto bad = base_config();
  bad.predictor = "prophet";
  BOOST_TEST(!planner::create(bad, {pool("a", worker_role::decode, 1)}));
  BOOST_TEST(!planner::create(base_config(), {pool("a", worker_role::decode, 1), pool("a", worker_role::decode, 1)}));
}

BOOST_AUTO_TEST_CASE(throughput_is_a_lower_bound) {
  auto c = base_config();
  c.throughput_scaling = true;
  auto spec = pool("dec", worker_role::decode, 1);
  spec.capacity.decode_tokens_per_s = 100;
  auto p = make(c, {spec});
  // 3 req/s x 100 output tokens = 300 tokens/s: 3 replicas although the load is low.
  p.observe_traffic("m", traffic{3.0, 50, 100, 0});
  auto r = tick(p, "dec", {1}, 0.5f, 1000);
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u);
  BOOST_TEST(r.decisions[0].target == 3u);
  BOOST_TEST(r.decisions[0].reason == "throughput needs 3; load says hold: within thresholds");
  BOOST_TEST(*r.pools[0].throughput_floor == 3u);
}

BOOST_AUTO_TEST_CASE(sla_mode_sizes_decode_from_the_profile_both_ways) {
  auto c = sla_config();
  auto spec = sla_decode_pool();
  auto p = make(c, {spec});
  p.set_instances("dec", 1);
  p.observe_traffic("m", traffic{10.0, 80, 40, 0}); // 400 output tokens/s: 1.6 engines
  auto up = tick(p, "dec", {1}, 0.1f, 1000);
  BOOST_REQUIRE_EQUAL(up.decisions.size(), 1u);
  BOOST_TEST(up.decisions[0].target == 2u);
  BOOST_TEST(up.pools[0].sla->decode_batch == 4u);
  BOOST_TEST(up.decisions[0].reason == "sla: 2 replicas for the predicted traffic");
  p.set_instances("dec", 2);
  p.observe_traffic("m", traffic{1.0, 80, 40, 0}); // 40 tokens/s: one engine
  auto down = tick(p, "dec", {1, 2}, 0.9f, 2000);  // high KV usage does not matter in sla mode
  BOOST_REQUIRE_EQUAL(down.decisions.size(), 1u);
  BOOST_TEST(down.decisions[0].target == 1u);
}

BOOST_AUTO_TEST_CASE(scale_down_waits_for_the_stabilization_window_scale_up_does_not) {
  auto c = sla_config();
  c.scale_down_stabilization_ms = 3000;
  auto spec = sla_decode_pool();
  auto p = make(c, {spec});
  p.set_instances("dec", 1);
  p.observe_traffic("m", traffic{10.0, 80, 40, 0}); // 1.6 engines: up to 2 at once
  auto up = tick(p, "dec", {1}, 0.1f, 1000);
  BOOST_REQUIRE_EQUAL(up.decisions.size(), 1u);
  BOOST_TEST(up.decisions[0].target == 2u);
  p.set_instances("dec", 2);
  p.observe_traffic("m", traffic{1.0, 80, 40, 0}); // one engine would do
  for (int64_t t : {2000, 3000}) {                  // 2 was proposed at 1000: held
    auto held = tick(p, "dec", {1, 2}, 0.1f, t);
    BOOST_TEST(held.decisions.empty(), t);
    BOOST_TEST(held.pools[0].verdict.find("held at 2") != std::string::npos, held.pools[0].verdict);
  }
  auto down = tick(p, "dec", {1, 2}, 0.1f, 4000); // 1000 is out of the window
  BOOST_REQUIRE_EQUAL(down.decisions.size(), 1u);
  BOOST_TEST(down.decisions[0].target == 1u);
  p.set_instances("dec", 1);
  p.observe_traffic("m", traffic{10.0, 80, 40, 0}); // and straight back up, without waiting
  auto again = tick(p, "dec", {1}, 0.1f, 5000);
  BOOST_REQUIRE_EQUAL(again.decisions.size(), 1u);
  BOOST_TEST(again.decisions[0].target == 2u);
}

BOOST_AUTO_TEST_CASE(observed_replicas_count_processes) {
  auto spec = pool("dec", worker_role::decode, 2);
  spec.workers_per_replica = 2;
  auto p = make(base_config(), {spec});
  p.set_instances("dec", 3); // one process up, one half-registered
  auto r = p.step(1000);
  BOOST_TEST(r.pools[0].observed == 2u);
}

BOOST_AUTO_TEST_CASE(forgotten_workers_no_longer_count) {
  auto p = make(base_config(), {pool("dec", worker_role::decode, 2)});
  p.observe_load("dec", load(1, 0.1f), 500);
  p.observe_load("dec", load(2, 0.9f), 500);
  p.forget_worker("dec", 2);
  p.observe_load("nope", load(3, 0.9f), 500); // unknown pools are ignored
  auto r = p.step(1000);
  BOOST_TEST(r.pools[0].engines == 1u);
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u);
  BOOST_TEST(r.decisions[0].target == 1u);
}

BOOST_AUTO_TEST_CASE(pool_specs_from_a_cluster_config) {
  config::cluster_config c;
  c.planner.gpus_per_worker = 2;
  c.planner.decode_tokens_per_s = 40;
  config::pool_config pc;
  pc.name = "dec";
  pc.role = worker_role::decode;
  pc.model = "m";
  pc.replicas = 3;
  pc.workers_per_process = 2;
  pc.engine_opts.max_num_batched_tokens = 512;
  c.pools.push_back(pc);
  auto specs = pool_specs(c);
  BOOST_REQUIRE_EQUAL(specs.size(), 1u);
  BOOST_TEST(specs[0].replicas == 3u);
  BOOST_TEST(specs[0].workers_per_replica == 2u);
  BOOST_TEST(specs[0].gpus_per_replica == 4u);
  BOOST_TEST(specs[0].prefill_capacity_tokens == 512u);
  BOOST_TEST(specs[0].capacity.decode_tokens_per_s == 80.0);
}

BOOST_AUTO_TEST_SUITE_END()
