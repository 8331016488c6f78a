// The engine profile the SLA planner and dynamo-configure size deployments
// from (research/dynamo.md 6.5, Dynamo's profile_sla): prefill time against
// prompt length and prefix-hit fraction, decode step time against batch and
// context, and the KV capacity; its JSON file. Measured by runtime/plan/profiler
// (dynamo-profile). Plain values.
#pragma once

#include "runtime/core/error.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dynamo::plan {

struct prefill_point {
  uint32_t isl = 0;
  double prefix_hit = 0;      ///< requested share of the prompt in the prefix cache
  uint32_t cached_tokens = 0; ///< what the engine reported as cached
  double ms = 0;              ///< first token after this long (all prefill steps)
};

struct decode_point {
  uint32_t batch = 0;
  uint32_t context = 0;
  double step_ms = 0;         ///< mean time of one decode step of the whole batch
};

struct engine_profile {
  std::string engine;         ///< "mocker", "cpu", "cuda"
  std::string model;
  uint32_t max_kv_tokens = 0; ///< blocks x block size
  uint32_t max_num_seqs = 0;
  uint32_t max_num_batched_tokens = 0;
  uint32_t max_model_len = 0;
  bool simulated = false;     ///< times are the mocker's simulated durations
  std::vector<prefill_point> prefill;
  std::vector<decode_point> decode;
  std::vector<std::string> skipped; ///< points that did not fit (context, KV), with why
};

/// The profile as JSON (the file dynamo-profile writes) and back.
[[nodiscard]] nlohmann::json to_json(const engine_profile& p);
[[nodiscard]] expected<engine_profile> profile_from_json(const nlohmann::json& j);

} // namespace dynamo::plan
