// The router's time-priced cost (route::weights_from_timing) from an engine
// profile: per-block prefill and decode times fitted to dynamo-profile's points,
// and the overlap weight a deployment's kv_router_config gets from them. Called
// by the apps before they build a router, and by tests. Pure, but for the file read.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/plan/profile.hpp"
#include "runtime/route/config.hpp"
#include "runtime/route/selector.hpp"

#include <optional>

namespace dynamo::plan {

/// Per-block times of `p`, in the profile's block size:
///  - prefill_ms_per_block: least-squares slope of the cold prefill points'
///    ms (prefix_hit 0) over their prompt tokens, x block_size;
///  - step_ms_per_block: least-squares slope of the decode step's ms over the
///    resident blocks (batch x kv_blocks(context)), within each batch and
///    pooled (each batch its own intercept: what a step costs per sequence
///    whatever its context stays out of the slope);
///  - onboard_ms_per_block 0: the profile has no onboarding times.
/// errc::invalid_argument when a fit is missing (fewer than 2 prompt lengths;
/// no batch at 2 contexts) or not positive.
[[nodiscard]] expected<route::timing_costs> router_timing_from_profile(const engine_profile& p);

/// What apply_router_cost set, for the log line.
struct router_cost_applied {
  route::timing_costs timing;
  double overlap_score_weight = 0; ///< timing.prefill_ms_per_block / timing.step_ms_per_block
};

/// With c.router_cost "timing": loads c.router_profile, derives its timings and
/// sets c.overlap_score_weight to their ratio (route::weights_from_timing);
/// the lower-tier weight stays as configured (no onboarding time to derive it
/// from). nullopt (nothing changed) with "dynamo". Errors: c.validate()'s
/// (timing without a profile among them); then, each naming --router-profile
/// and the file: unreadable or not a profile, a fit missing, and a
/// kv_overlap_score_weight also set (other than 1), which timing replaces.
[[nodiscard]] expected<std::optional<router_cost_applied>> apply_router_cost(route::kv_router_config& c);

} // namespace dynamo::plan
