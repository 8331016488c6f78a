// Discrete-event simulation of one deployment under a request set: engines
// step as the scheduler does, timed by the profile (plan::step_times); requests
// are routed as the router does (docs/CLUSTER.md, dynamo-configure). Called by
// the search; not thread-safe (one simulator per thread).
#pragma once

#include "runtime/configure/traffic.hpp"
#include "runtime/plan/profile.hpp"
#include "runtime/route/config.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace dynamo::configure {

enum class deployment_mode : uint8_t { aggregated, disaggregated };
[[nodiscard]] std::string_view to_string(deployment_mode m) noexcept;

/// One point of the search space.
struct deployment {
  deployment_mode mode = deployment_mode::aggregated;
  uint32_t prefill_replicas = 0;          ///< disaggregated only
  uint32_t decode_replicas = 1;           ///< aggregated: the replicas
  uint32_t max_num_seqs = 256;            ///< every engine
  uint32_t max_num_batched_tokens = 8192; ///< every engine
  uint32_t max_local_prefill_length = 512; ///< disaggregated: the prefill-first threshold
  route::router_mode router = route::router_mode::kv;
  [[nodiscard]] uint32_t workers() const noexcept { return prefill_replicas + decode_replicas; }
};
[[nodiscard]] std::string describe(const deployment& d);

/// What is fixed for every candidate.
struct sim_options {
  double percentile = 90;        ///< of TTFT and ITL, nearest rank
  uint32_t block_size = 16;      ///< KV block tokens (the router's decode-block load)
  uint32_t gpus_per_worker = 1;
  /// Prefill -> decode hand-off, per request: overrides the profile's measured
  /// cost (engine_profile::handoff, fixed + per KV block of the prompt); without
  /// either, 0.
  std::optional<double> transfer_ms;
  /// Lengthen every engine step by the profile's measured step_overhead (what
  /// a launched worker adds per step and sequence); false: the profile's times.
  bool step_overhead = true;
  uint64_t max_steps = 5'000'000; ///< a guard; a run that hits it is marked incomplete
};

struct sim_result {
  double ttft_ms = 0;            ///< at the percentile
  double itl_ms = 0;             ///< at the percentile, over every token gap (as dynamo-bench)
  double mean_ttft_ms = 0;
  double mean_itl_ms = 0;
  double output_tokens_per_s = 0; ///< completed output tokens / (last completion - first arrival)
  double tokens_per_s_per_gpu = 0;
  uint32_t gpus = 0;
  size_t completed = 0;
  size_t requests = 0;
  double hit_rate = 0;           ///< cached / prompt tokens over all prefills
  size_t remote_prefills = 0;    ///< disaggregated: requests prefilled on a prefill worker
  /// An engine held more KV tokens than it has: the real scheduler would have
  /// preempted, so latencies here are optimistic.
  bool kv_overflow = false;
  uint64_t steps = 0;
};

class simulator {
public:
  simulator(const plan::engine_profile& profile, sim_options options);
  ~simulator();
  simulator(const simulator&) = delete;
  simulator& operator=(const simulator&) = delete;

  /// The profile has prefill and decode points (else run() returns zeros).
  [[nodiscard]] bool usable() const noexcept;
  [[nodiscard]] const sim_options& options() const noexcept { return options_; }
  [[nodiscard]] uint32_t kv_tokens() const noexcept { return kv_tokens_; }
  /// What a hand-off adds to the TTFT of a prompt of `isl` tokens.
  [[nodiscard]] double handoff_ms(uint32_t isl) const noexcept {
    return handoff_.ms(plan::kv_blocks(isl, handoff_block_));
  }
  /// What a step of `seqs` sequences takes beyond the profile's step time.
  [[nodiscard]] double step_overhead_ms(uint32_t seqs) const noexcept { return overhead_.ms(seqs); }

  /// Replays `requests` against `d`. Deterministic.
  [[nodiscard]] sim_result run(const deployment& d, const request_set& requests);

private:
  struct state;
  plan::step_times times_;
  sim_options options_;
  uint32_t kv_tokens_;
  plan::linear_cost handoff_;    ///< --transfer-ms as a fixed term, else the profile's
  uint32_t handoff_block_;       ///< the profile's KV block tokens
  plan::linear_cost overhead_;   ///< the profile's when options.step_overhead, else zeros
  std::unique_ptr<state> state_; ///< buffers reused across runs
};

} // namespace dynamo::configure
