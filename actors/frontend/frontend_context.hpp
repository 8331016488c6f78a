// What the frontend service shares with every request actor: the model
// registry and the metrics. Held by shared_ptr so that requests still in
// flight when the service stops keep a valid context. Thread-safe.
#pragma once

#include "actors/frontend/model_registry.hpp"
#include "runtime/metrics/frontend_metrics.hpp"
#include "runtime/metrics/registry.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace dynamo::frontend {

struct frontend_context {
  model_registry models;
  metrics::registry registry; ///< rendered at GET /metrics
  std::unique_ptr<metrics::frontend_metrics> metrics; ///< families inside `registry`
  /// A request whose backend sends nothing for this long fails with 504 (or
  /// an SSE error) and its generation is cancelled. Zero disables the check.
  std::chrono::milliseconds backend_timeout{0};
  /// Overrides of each model's detected output format (frontend_options).
  std::string tool_call_parser = "auto";
  std::string reasoning_parser = "auto";
  /// Graceful shutdown: new generation requests get 503 and /live says
  /// "shutting_down" while requests in flight finish.
  std::atomic<bool> draining{false};
  /// Generation requests whose actor is still alive.
  std::atomic<int64_t> inflight{0};
};

} // namespace dynamo::frontend
