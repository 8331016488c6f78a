// Serves a worker actor on the request plane: decodes each call into a
// preprocessed_request, hands it to the current worker actor (whose handle
// changes when a supervisor restarts it) and streams engine_output chunks back.
// A client cancel aborts the request; a worker actor that dies with requests in
// flight fails their streams with errc::closed, which the frontend treats as
// migratable (a dead *process* shows up as errc::disconnected instead). Counts
// each request in dynamo_component_* when given metrics. Thread-safe; handlers
// run on the request plane's I/O thread.
#pragma once

#include "actors/core/actor_handle.hpp"
#include "planes/request/request_plane.hpp"
#include "runtime/metrics/component_metrics.hpp"

#include <caf/actor.hpp>

#include <memory>
#include <mutex>
#include <string>

namespace dynamo::actors {

/// The worker actor currently serving an endpoint; updated by the supervisor.
using worker_handle = actor_handle;

/// Where a served endpoint counts its requests (dynamo_component_*); none
/// when `metrics` is null.
struct endpoint_metrics {
  std::shared_ptr<metrics::component_metrics> metrics;
  metrics::endpoint_labels labels;
  uint64_t worker_id = 0; ///< the instance behind the endpoint (kvstats labels)
};

/// Registers `endpoint_path` on `server`, forwarding calls to `worker`.
[[nodiscard]] expected<void> serve_worker(planes::request_server& server,
                                          const std::string& endpoint_path,
                                          std::shared_ptr<worker_handle> worker,
                                          endpoint_metrics metrics = {});

/// Registers a prefill worker's kv_push endpoint (disaggregation): decode
/// workers ask it to push held KV blocks; the answer is one kv_transfer_status.
[[nodiscard]] expected<void> serve_kv_push(planes::request_server& server,
                                           const std::string& endpoint_path,
                                           std::shared_ptr<worker_handle> worker);

} // namespace dynamo::actors
