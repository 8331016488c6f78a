// dynamo-profile --handoff: what a prefill -> decode hand-off adds to TTFT on
// a real cluster of the profiled engine. Starts the clusters dynamo-configure
// would write (configure::to_cluster_config) with dynamo-launch, one worker
// aggregated and 1 prefill + 1 decode, sends the same prompts one at a time to
// both (dynamo-bench's load generator) and fits the extra TTFT as fixed + per
// KV block (plan::fit_handoff). measure_handoff() blocks its (main) thread and
// never leaves children behind.
#pragma once

#include "runtime/config/cluster_config.hpp"
#include "runtime/core/error.hpp"
#include "runtime/plan/profile.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dynamo::profile_app {

struct handoff_probe_config {
  std::string launcher;                 ///< the dynamo-launch binary
  std::string work_dir;                 ///< the clusters' YAML and discovery roots go here
  std::vector<uint32_t> isl{256, 1024, 2048, 4096};
  uint32_t requests = 10;               ///< measured per ISL and cluster (the median is kept)
  uint32_t warmup = 2;                  ///< unmeasured requests per ISL and cluster
  std::string log_level = "warn";       ///< the launchers'
  uint32_t startup_timeout_s = 60;
};

/// The fitted cost with its points. Errors: a cluster that would not start or
/// died, a failed request, a disaggregated cluster that prefilled locally.
[[nodiscard]] expected<plan::handoff_cost> measure_handoff(const config::pool_config& pool,
                                                           const plan::engine_profile& profile,
                                                           const handoff_probe_config& cfg,
                                                           const std::function<void(const std::string&)>& log);

} // namespace dynamo::profile_app
