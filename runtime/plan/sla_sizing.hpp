// SLA sizing with queueing, for the pools where it decides the answer: an
// aggregated pool (prompts and decoding on the same engines interfere: while
// an engine computes a prompt, its decoding batch waits) and a prefill pool
// (prompts queue behind each other against the TTFT target). Used by the
// planner's SLA mode; pure functions over a profile, any thread.
#pragma once

#include "runtime/plan/profile.hpp"

#include <cstdint>
#include <optional>

namespace dynamo::plan {

/// What `engines` engines sharing `rate` requests/s would see.
struct aggregated_estimate {
  double prefill_share = 0; ///< rho: the share of an engine's time spent on prompts
  double batch = 0;         ///< sequences decoding at once (Little's law)
  double itl_ms = 0;        ///< decode step / (1 - rho)
  double ttft_ms = 0;       ///< prompt + the step it joins + M/D/1 wait behind other prompts
};

/// The estimate for `engines` engines, each taking rate / engines requests/s
/// of `isl` computed (after prefix hits) and `osl` output tokens:
///   rho = (rate / engines) x prefill(isl); ITL = step(batch) / (1 - rho);
///   batch = (rate / engines) x osl x ITL (solved as a fixed point);
///   TTFT = prefill + step(batch) + rho x prefill / (2 (1 - rho)).
/// nullopt when rho >= 1, the batch outgrows the profile (max_num_seqs, the
/// largest profiled batch, the KV cache) or the profile lacks points.
[[nodiscard]] std::optional<aggregated_estimate> estimate_aggregated(const engine_profile& p, double rate,
                                                                     double isl, double osl, uint32_t engines);

/// The fewest engines (<= max_engines) whose estimate meets both targets;
/// nullopt when even max_engines does not.
[[nodiscard]] std::optional<uint32_t> aggregated_engines_for_sla(const engine_profile& p, const sla_targets& sla,
                                                                 double rate, double isl, double osl,
                                                                 uint32_t max_engines);

/// The fewest prefill engines (<= max_engines) whose prompts meet the TTFT
/// target: each takes rate / engines prompts/s of `isl` computed tokens, busy
/// rho = that x prefill(isl), and a prompt waits behind others as in M/D/1:
/// TTFT = prefill + rho x prefill / (2 (1 - rho)). nullopt when even
/// max_engines does not (or the profile has no prefill points).
[[nodiscard]] std::optional<uint32_t> prefill_engines_for_sla(const engine_profile& p, const sla_targets& sla,
                                                              double rate, double isl, uint32_t max_engines);

} // namespace dynamo::plan
