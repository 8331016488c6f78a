// The frontend's Prometheus metrics with Dynamo's names, labels, help texts and
// log buckets (prefix "dynamo_frontend"), and `request_recorder`, which turns
// one request's life (start, prompt, token chunks, end) into observations.
// frontend_metrics is thread-safe; a request_recorder belongs to one request
// (one actor) and is not. Times are passed in, so tests can inject them.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/metrics/log_buckets.hpp"
#include "runtime/metrics/registry.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::metrics {

struct frontend_metrics_config {
  std::string prefix = "dynamo_frontend";               ///< Dynamo's DYN_METRICS_PREFIX
  bucket_spec request_duration{1.0, 512.0, 10};         ///< seconds
  bucket_spec input_sequence{50.0, 128000.0, 12};       ///< tokens (also cached_tokens)
  bucket_spec output_sequence{50.0, 32000.0, 10};       ///< tokens
  bucket_spec time_to_first_token{0.001, 480.0, 18};    ///< seconds
  bucket_spec inter_token_latency{0.001, 2.0, 13};      ///< seconds
};

/// The defaults with Dynamo's environment overrides applied: DYN_METRICS_PREFIX,
/// and DYN_METRICS_{REQUEST_DURATION,TTFT,ITL}_{MIN,MAX,COUNT}. `env` looks a
/// variable up (std::getenv in the apps; null or "" when unset). config_error
/// naming the variable for a value that is not a number, a bucket range that
/// is not 0 < min < max, a count outside [1, 64], or a prefix that is not a
/// Prometheus metric name.
[[nodiscard]] expected<frontend_metrics_config>
frontend_metrics_config_from_env(const std::function<const char*(const char*)>& env);

/// Label values, spelled as Dynamo spells them.
/// The `endpoint` label: Dynamo's names for its OpenAI routes, plus this
/// project's Anthropic and tokenizer routes.
enum class endpoint_label : uint8_t {
  chat_completions, completions, responses, anthropic_messages, anthropic_count_tokens,
  embeddings, tokenize, detokenize
};
enum class request_type : uint8_t { unary, stream };
enum class error_type : uint8_t {
  none, validation, not_found, overload, cancelled, response_timeout, internal, not_implemented
};

[[nodiscard]] std::string_view to_string(endpoint_label v) noexcept;
[[nodiscard]] std::string_view to_string(request_type v) noexcept;
[[nodiscard]] std::string_view to_string(error_type v) noexcept;

/// The error_type label for a failed request with code `code`.
[[nodiscard]] error_type error_type_of(errc code) noexcept;

class frontend_metrics {
public:
  /// Registers every family in `reg` (which must outlive this object).
  [[nodiscard]] static expected<std::unique_ptr<frontend_metrics>>
  create(registry& reg, const frontend_metrics_config& cfg = {});

  /// A model starts being served: its success counters and in-flight gauges
  /// exist at 0 from now on (a counter that first appears at 1 loses that
  /// first increase to rate()).
  void register_model(std::string_view model);

  /// Counts a request that ended before a recorder existed (e.g. unknown model).
  void count_request(std::string_view model, endpoint_label ep, request_type rt, error_type err);

  counter_family* requests_total = nullptr;        ///< model, endpoint, request_type, status, error_type
  gauge_family* inflight_requests = nullptr;       ///< model: handler start -> response complete
  gauge_family* queued_requests = nullptr;         ///< model: handler start -> first token
  /// (no labels) Dynamo's name; a counter: it only ever counts up.
  counter_family* disconnected_clients = nullptr;
  histogram_family* request_duration = nullptr;    ///< model, seconds
  histogram_family* input_sequence_tokens = nullptr;
  histogram_family* output_sequence_tokens = nullptr;
  histogram_family* cached_tokens = nullptr;
  counter_family* output_tokens_total = nullptr;   ///< model, real time
  histogram_family* time_to_first_token = nullptr; ///< model, seconds
  histogram_family* inter_token_latency = nullptr; ///< model, seconds
  counter_family* model_migration_total = nullptr; ///< model, migration_type (new_request|ongoing_request)
  counter_family* disagg_requests_total = nullptr; ///< model, prefill (remote|local_fallback)

private:
  frontend_metrics() = default;
};

/// One request's metrics. Construction counts it in flight and queued; the
/// first tokens end the queued phase (TTFT); each later chunk with k tokens
/// observes ITL k times as gap/k; `finish` (or the destructor) counts the
/// request with its status, observes the duration and, when tokens came out,
/// the output length. A request that was never marked ok counts as an
/// internal error.
class request_recorder {
public:
  using clock = std::chrono::steady_clock;

  request_recorder(frontend_metrics& m, std::string model, endpoint_label ep, request_type rt,
                   clock::time_point start);
  ~request_recorder();
  request_recorder(const request_recorder&) = delete;
  request_recorder& operator=(const request_recorder&) = delete;

  /// Prompt length, known after tokenization (observed once).
  void observe_prompt(uint32_t prompt_tokens);
  /// Prompt tokens served from the prefix cache (observed once).
  void observe_cached(uint32_t cached);
  /// A chunk carrying `n` new tokens arrived at `now` (n == 0 is ignored).
  void observe_tokens(uint32_t n, clock::time_point now);

  void mark_ok() noexcept { error_ = error_type::none; }
  void mark_error(error_type e) noexcept { error_ = e; }
  /// The client went away: counts a disconnected client, error_type cancelled.
  void mark_disconnected();

  /// Ends the request at `now`; later calls do nothing.
  void finish(clock::time_point now);

  [[nodiscard]] uint32_t output_tokens() const noexcept { return output_tokens_; }

private:
  frontend_metrics* m_;
  std::string model_;
  endpoint_label endpoint_;
  request_type type_;
  clock::time_point start_;
  std::optional<clock::time_point> last_chunk_;
  error_type error_ = error_type::internal;
  uint32_t output_tokens_ = 0;
  bool queued_ = true;
  bool prompt_observed_ = false;
  bool cached_observed_ = false;
  bool finished_ = false;
};

} // namespace dynamo::metrics
