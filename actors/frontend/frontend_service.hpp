// The OpenAI-compatible frontend: owns the HTTP server and the model
// registry, serves GET /v1/models[/{id}], POST /v1/chat/completions,
// /v1/completions, /v1/responses, /tokenize, /detokenize (and, when enabled,
// Anthropic's /v1/messages and /v1/messages/count_tokens), GET /health,
// /live, /metrics and /openapi.json, and
// spawns one request actor per generation request. Thread-safe: models may be
// added or removed while serving. The actor_system (scheduler.policy=sharing
// recommended) is created by the app and must outlive the service.
#pragma once

#include "actors/frontend/frontend_context.hpp"
#include "actors/frontend/model_registry.hpp"
#include "planes/http/server.hpp"
#include "runtime/metrics/frontend_metrics.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string_view>

namespace dynamo::frontend {

struct frontend_options {
  http::server_options http;                 ///< its error_body is replaced by OpenAI's body
  metrics::frontend_metrics_config metrics;  ///< names and buckets of dynamo_frontend_*
  /// Longest silence from the backend within one request before it fails
  /// with errc::timeout (504, or an SSE error once streaming). 0: no limit.
  std::chrono::milliseconds backend_timeout{std::chrono::minutes(10)};
  /// How tool calls / reasoning are parsed out of every model's output
  /// (openai::apply_overrides): "auto" detects from the chat template.
  std::string tool_call_parser = "auto";
  std::string reasoning_parser = "auto";
  /// Serve the Anthropic Messages API (Dynamo's --enable-anthropic-api).
  bool anthropic_api = false;
};

class frontend_service {
public:
  /// Starts listening. errc::io_error when the port cannot be bound,
  /// errc::invalid_argument for bad options (e.g. a bad metrics prefix).
  [[nodiscard]] static expected<std::unique_ptr<frontend_service>>
  start(caf::actor_system& sys, frontend_options opts = {});

  ~frontend_service();
  frontend_service(const frontend_service&) = delete;
  frontend_service& operator=(const frontend_service&) = delete;

  /// Serves `e` under e.card.name (replacing a model of that name).
  [[nodiscard]] expected<void> add_model(model_entry e);
  /// Stops serving `name`; requests already running finish normally.
  bool remove_model(std::string_view name);

  [[nodiscard]] uint16_t port() const noexcept;
  /// The Prometheus registry behind GET /metrics.
  [[nodiscard]] const metrics::registry& metrics_registry() const noexcept;
  /// The same registry, for other components' metric families; it lives as long
  /// as the returned pointer.
  [[nodiscard]] std::shared_ptr<metrics::registry> shared_metrics_registry() const noexcept;

  /// Stops the HTTP server; in-flight requests see their clients disconnect
  /// (their generations are cancelled). Idempotent.
  void stop();

  /// Graceful stop: refuse new generation requests (503, /live reports
  /// shutting_down), wait up to `grace` for the ones in flight, then stop().
  /// Returns how many were still running when the grace period ended.
  int64_t drain_and_stop(std::chrono::milliseconds grace);

  /// Generation requests in flight.
  [[nodiscard]] int64_t inflight() const noexcept;

  /// Counts a request migration (dynamo_frontend_model_migration_total).
  void count_migration(std::string_view model, bool ongoing);
  /// Counts a prefill-first request (dynamo_frontend_disagg_requests_total).
  void count_disagg(std::string_view model, bool remote);

private:
  frontend_service(caf::actor_system& sys, std::shared_ptr<frontend_context> ctx);
  [[nodiscard]] http::router make_routes(bool anthropic_api);
  void add_anthropic_routes(http::router& r);

  caf::actor_system& sys_;
  std::shared_ptr<frontend_context> ctx_;
  std::unique_ptr<http::server> server_;
};

} // namespace dynamo::frontend
