// What the frontend service shares with every request actor: the model
// registry and the metrics. Held by shared_ptr so that requests still in
// flight when the service stops keep a valid context. Thread-safe.
#pragma once

#include "actors/frontend/model_registry.hpp"
#include "runtime/metrics/frontend_metrics.hpp"
#include "runtime/metrics/registry.hpp"

#include <chrono>
#include <memory>

namespace dynamo::frontend {

struct frontend_context {
  model_registry models;
  metrics::registry registry; ///< rendered at GET /metrics
  std::unique_ptr<metrics::frontend_metrics> metrics; ///< families inside `registry`
  /// A request whose backend sends nothing for this long fails with 504 (or
  /// an SSE error) and its generation is cancelled. Zero disables the check.
  std::chrono::milliseconds backend_timeout{0};
};

} // namespace dynamo::frontend
