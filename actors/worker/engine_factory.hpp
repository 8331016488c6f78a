// Builds engines for worker actors from a pool's configuration: the mocker, or
// the CPU engine (one GGUF model loaded once and shared by the pool's
// executors, each with its own KV cache). Also derives the model card the pool
// publishes. Called while wiring a process (main thread); the factories it
// returns run inside worker actors.
#pragma once

#include "actors/worker/worker_actor.hpp"
#include "actors/worker/worker_service.hpp"
#include "runtime/config/cluster_config.hpp"
#include "runtime/protocol/model_card.hpp"

#include <memory>
#include <string>

namespace dynamo::actors {

/// What a pool runs, resolved: executor kind, model and engine limits.
struct engine_plan {
  config::pool_config pool;
  protocol::model_card card;          ///< what the pool publishes
  size_t kv_cache_bytes = 0;          ///< CPU engine KV budget per worker
  bool detached = false;              ///< real executors block: own thread
};

/// Loads what must be loaded once (the GGUF model for cpu) and returns the plan
/// plus a maker of per-worker engine factories. Errors: unreadable model,
/// unsupported engine (cuda without a CUDA build), bad limits. With a KVBM
/// disk tier it first removes the stale per-process block directories of the
/// old layout under the pool's disk_path (kvbm::remove_stale_block_dirs).
struct engine_setup {
  engine_plan plan;
  engine_factory_maker make_factory;
};

[[nodiscard]] expected<engine_setup> prepare_engines(const config::pool_config& pool,
                                                     size_t kv_cache_bytes = size_t(512) << 20);

} // namespace dynamo::actors
