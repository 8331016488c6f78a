// The GPU (worker) budget across pools (research/dynamo.md 6.2): when the
// proposed replicas cost more GPUs than the budget, scale every pool by
// budget/total in priority order (prefill first), each keeping its minimum and
// reserving the minimums of the pools after it; the last pool gets what is
// left. plan::planner applies it without reversing any pool's direction.
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace dynamo::plan {

struct budget_pool {
  uint32_t current = 0;  ///< replicas before this step
  uint32_t proposed = 0; ///< replicas the policy wants
  uint32_t min = 1;      ///< never below this
  uint32_t cost = 1;     ///< GPUs per replica (> 0)
};

/// Dynamo's proportional rule over `proposed`, generalised from (prefill,
/// decode) to pools in priority order. Unchanged when `budget` < 0 or the
/// total fits; std::nullopt when even the minimums do not fit. Pools before
/// the last get max(min, floor(proposed * budget / total)), capped so that
/// the later pools' minimums still fit; the last gets the remainder, capped at
/// its proposal.
[[nodiscard]] std::optional<std::vector<uint32_t>>
proportional_fit(const std::vector<budget_pool>& pools, int64_t budget);

/// The budget as a guard on one planning step: each result lies between the
/// pool's current and proposed replicas (no direction is reversed). When the
/// current allocation is already over budget, pools only shrink (the rule is
/// applied to min(current, proposed)). When growth does not fit, it is first
/// split by proportional_fit, then taken back one replica at a time from the
/// lowest-priority growing pool. std::nullopt when the minimums do not fit.
[[nodiscard]] std::optional<std::vector<uint32_t>>
enforce_gpu_budget(const std::vector<budget_pool>& pools, int64_t budget);

/// Sum of replicas x cost.
[[nodiscard]] uint64_t total_cost(const std::vector<budget_pool>& pools,
                                  const std::vector<uint32_t>& replicas) noexcept;

} // namespace dynamo::plan
