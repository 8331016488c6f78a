// dynamo-configure's search: the candidate deployments within a GPU budget,
// each simulated (simulator.hpp), the Pareto front of output tokens/s per GPU
// against TTFT and ITL at the percentile, and the winner under the SLA.
// Called by apps/dynamo-configure and its benchmark. Single-threaded.
#pragma once

#include "runtime/configure/simulator.hpp"
#include "runtime/configure/traffic.hpp"
#include "runtime/plan/profile.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace dynamo::configure {

struct search_space {
  bool aggregated = true;
  bool disaggregated = true;
  std::vector<uint32_t> max_num_seqs{16, 32, 64, 128, 256};
  std::vector<uint32_t> max_num_batched_tokens{1024, 2048, 4096, 8192};
  std::vector<uint32_t> thresholds{0, 256, 512, 1024, 2048}; ///< disagg max_local_prefill_length
  std::vector<route::router_mode> routers{route::router_mode::kv, route::router_mode::round_robin};
  uint32_t gpu_budget = 8;      ///< GPUs of all workers together
  uint32_t gpus_per_worker = 1;
};

/// Every deployment of the space whose workers fit the budget: aggregated
/// with 1..budget replicas; disaggregated with P >= 1 prefill and D >= 1
/// decode replicas, P + D within it (one candidate per threshold); each with
/// every max_num_seqs, max_num_batched_tokens and router mode.
[[nodiscard]] std::vector<deployment> enumerate(const search_space& space);

struct evaluated {
  deployment d;
  sim_result r;
  bool meets_sla = false;
};

/// Every request completed, no KV overflow, TTFT and ITL at the percentile within the targets.
[[nodiscard]] bool meets(const sim_result& r, const plan::sla_targets& sla) noexcept;

/// Called after each simulated candidate (progress output).
using search_progress = std::function<void(size_t done, size_t total)>;

/// Simulates every candidate against the same requests.
[[nodiscard]] std::vector<evaluated> evaluate(simulator& sim, const std::vector<deployment>& candidates,
                                              const request_set& requests, const plan::sla_targets& sla,
                                              const search_progress& progress = {});

/// Indices of the non-dominated results (higher tokens/s per GPU, lower TTFT,
/// lower ITL; exact duplicates keep the first), by tokens/s per GPU, highest
/// first. Incomplete runs are left out.
[[nodiscard]] std::vector<size_t> pareto_front(const std::vector<evaluated>& results);

/// The result that meets the SLA with the most tokens/s per GPU; among those
/// within 1% of that, the lowest TTFT, then ITL, then the fewest GPUs, then
/// the first. nullopt when none meets it.
[[nodiscard]] std::optional<size_t> pick_winner(const std::vector<evaluated>& results);

} // namespace dynamo::configure
