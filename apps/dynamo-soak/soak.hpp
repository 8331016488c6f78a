// dynamo-soak: a fault-injection benchmark. Launches a mocker cluster with
// dynamo-launch, streams requests at a fixed concurrency while SIGKILLing
// worker processes (the launcher restarts them), and checks every response
// token by token against the mocker's deterministic output (so a lost,
// duplicated or missing token is caught). Reports JSON. run() blocks.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>

namespace dynamo::soak {

struct soak_config {
  std::string bin_dir;              ///< where dynamo-launch & co. live
  uint32_t workers = 4;             ///< mocker worker processes
  uint32_t requests = 500;          ///< total requests (when duration_s == 0)
  double duration_s = 0;            ///< > 0: run for this long instead
  uint32_t concurrency = 64;
  uint32_t isl = 64, osl = 64;
  double speedup_ratio = 1.0;       ///< mocker speed (1: Dynamo's timing model)
  uint32_t kill_interval_ms = 1000; ///< 0: no kills (baseline)
  uint32_t migration_limit = 3;
  uint64_t seed = 1;
  std::string router_mode = "kv";
  std::string log_level = "warn";
};

/// Runs the soak; the JSON report, or an error when the cluster cannot start.
/// `ok` is false when any request was lost or wrong.
[[nodiscard]] expected<std::string> run(const soak_config& cfg, bool& ok);

} // namespace dynamo::soak
