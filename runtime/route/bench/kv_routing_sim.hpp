// dynamo-kv-routing-bench's simulation: N mocker engines (the real
// engine_core + mock_executor) behind the real kv_router on a virtual clock,
// replaying one multi-turn trace. Used by kv_routing_bench.cpp's main;
// single-threaded, no sleeping.
#pragma once

#include "runtime/kvbm/kvbm_config.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/route/bench/kvbm_cpu_bench.hpp"
#include "runtime/route/bench/ttft_breakdown.hpp"
#include "runtime/route/config.hpp"
#include "runtime/route/kv_router.hpp"
#include "runtime/route/workload.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::route::bench {

struct options {
  uint32_t workers = 8;
  std::string preset = "agent";
  std::vector<double> rates{2, 4, 6, 8}; ///< sessions per second, one run each
  workload_config workload;
  mocker::mocker_config engine;
  std::vector<std::string> modes{"kv", "round-robin"};
  uint64_t seed = 1;
  /// --replies trace: every turn's prompt from the trace's hash ids, arriving at
  /// its timestamp (turn N+1 re-sends only turn N's full 512-token trace
  /// blocks, and never the reply). Default (actual): a session's next turn is
  /// its previous prompt + the reply the engine returned + the new user
  /// tokens, sent the trace's think time after that reply ended.
  bool trace_replies = false;
  /// KVBM variants per mode: off | host | host+disk (--kvbm).
  std::vector<std::string> kvbm{"off"};
  double kvbm_host_gb = 4;  ///< per worker
  double kvbm_disk_gb = 64; ///< per worker
  int64_t kvbm_disk_min_frequency = 0; ///< --kvbm-disk-min-frequency; 0: the filter's default (2)
  double lower_tier_weight = kv_router_config{}.router_lower_tier_weight; ///< --router-lower-tier-weight
  double overlap_weight = kv_router_config{}.overlap_score_weight; ///< --kv-overlap-score-weight
  /// --router-cost timing: the two weights above priced in time
  /// (router_cost_weights), per KVBM variant; dynamo (default): as given.
  bool timing_cost = false;
  /// --router-profile: the dynamo-profile JSON timing takes its per-block
  /// times from; empty: a profile of the bench's own mocker engine.
  std::string router_profile;
  /// Timing's per-block prefill and step times (profiled_timing), set by main.
  timing_costs timing;
  /// --router-kv-capacity: the router knows each worker's G1 blocks
  /// (kv_router_config::router_kv_capacity, kv_router::set_worker_capacity).
  bool router_capacity = false;
  bool cpu_engine = false; ///< --cpu-engine: also the KVBM variants on one real CPU engine
  bool disk_onboard = false; ///< --disk-onboard: only the disk tier's read path
  bool disk_restart = false; ///< --disk-restart: only the disk tier's start-up
  bench::disk_onboard_options disk;
  bench::cpu_bench_options cpu;
};

/// The engines' KVBM tiers for variant `v` (off | host | host+disk).
[[nodiscard]] kvbm::kvbm_config kvbm_of(const options& o, std::string_view v);

/// Timing's per-block prefill and step times as a deployment's router derives
/// them (plan::router_timing_from_profile): from the profile at
/// o.router_profile, else from profiling o.engine (plan::run_profile with
/// dynamo-profile's default grid, cold prompts only; simulated time, so
/// deterministic). Errors: the file's, the profile's, the engine's.
[[nodiscard]] expected<timing_costs> profiled_timing(const options& o);

/// The router's weights for variant `v`: o's, or with timing_cost
/// weights_from_timing of o.timing's prefill and step times and the mocker's
/// onboarding of one block from the lowest tier the variant has (which no
/// profile holds).
[[nodiscard]] cost_weights router_cost_weights(const options& o, std::string_view v);

struct request_state {
  double arrival_us = 0;
  double first_token_us = -1;
  double done_us = -1;
  uint32_t prompt = 0;
  uint32_t cached = 0;
  uint32_t outputs = 0;
  uint32_t predicted_overlap_tokens = 0;
};

struct sim_result {
  std::vector<request_state> requests;
  uint64_t computed_tokens = 0;
  uint64_t steps = 0;
  uint64_t resyncs = 0;
  uint64_t preemptions = 0;
  uint64_t errors = 0;
  uint64_t lifecycle_mismatches = 0; ///< router bookings that did not match the engine
  double end_us = 0;
  std::vector<uint64_t> per_worker_requests;
  std::vector<bench::request_probe> probes;
  std::vector<double> first_token_us;
  uint64_t working_set_blocks = 0; ///< distinct prompt blocks
  uint32_t engine_block_size = 16;
  uint32_t engine_num_blocks = 0;
  protocol::kvbm_metrics kvbm; ///< summed over the engines (hit rates: their mean)
  bool has_kvbm = false;
};

/// One run of `trace` against o.workers mocker engines with KVBM variant `kvbm`.
[[nodiscard]] sim_result simulate(const options& o, router_mode mode, const std::vector<trace_record>& trace,
                                  std::string_view kvbm);

} // namespace dynamo::route::bench
