// dynamo-profile --handoff: what a real cluster of the profiled engine adds to
// the profile's times. Starts the clusters dynamo-configure would write
// (configure::to_cluster_config) with dynamo-launch, one worker aggregated and
// 1 prefill + 1 decode; sends prompts one at a time to both in turn
// (dynamo-bench's load generator) and fits the extra TTFT of the hand-off as
// fixed + per KV block (plan::fit_cost); runs batches of concurrent
// requests on the aggregated worker and fits its inter-token gap beyond the
// profile's decode step as fixed + per sequence.
// measure_cluster() blocks its (main) thread and never leaves children behind.
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
  std::vector<uint32_t> batch{1, 16, 64}; ///< step overhead: concurrent requests (<= max_num_seqs)
  uint32_t batch_isl = 256, batch_osl = 64;  ///< step overhead: their prompt and output lengths
  std::string log_level = "warn";       ///< the launchers'
  uint32_t startup_timeout_s = 60;
};

struct cluster_costs {
  plan::linear_cost handoff;       ///< per KV block of the prompt
  plan::linear_cost step_overhead; ///< per sequence in a step
};

/// The fitted costs with their points. Errors: a cluster that would not start
/// or died, a failed request, a disaggregated cluster that prefilled locally.
[[nodiscard]] expected<cluster_costs> measure_cluster(const config::pool_config& pool,
                                                      const plan::engine_profile& profile,
                                                      const handoff_probe_config& cfg,
                                                      const std::function<void(const std::string&)>& log);

} // namespace dynamo::profile_app
