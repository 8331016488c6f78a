// The metric families a worker process exports on its system server
// (/metrics), with Dynamo's names: dynamo_component_* per served endpoint
// (requests, in-flight, duration, time to first response, errors,
// cancellations, bytes, uptime) and per worker instance
// dynamo_component_kvstats_* (KV blocks, cache usage, prefix-cache hit rate),
// dynamo_component_engine_requests_{running,waiting}, the engine's steps
// (dynamo_component_engine_step_seconds / _step_tokens) and, with the KV block
// manager, Dynamo's kvbm_* counters and hit rates. Created once per
// process by the worker service; updated from request-plane threads and the
// engines' load reports. Every method is safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/metrics/registry.hpp"
#include "runtime/protocol/kv_event.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace dynamo::metrics {

/// The labels of one served endpoint (Dynamo's hierarchy labels).
struct endpoint_labels {
  std::string dynamo_namespace, dynamo_component, dynamo_endpoint;
};

/// Why a request the worker accepted ended badly (Dynamo's error_type values
/// that apply here).
enum class component_error : uint8_t {
  deserialization, ///< the request did not decode
  generate,        ///< the engine answered with an error (or the worker restarted)
  response_stream  ///< the response could not be sent (client gone)
};

[[nodiscard]] std::string_view to_string(component_error e) noexcept;

class component_metrics {
public:
  /// Registers every family in `reg` (which must outlive this object).
  [[nodiscard]] static expected<std::unique_ptr<component_metrics>> create(registry& reg);

  /// A request arrived on `ep` (`request_bytes` on the wire).
  void on_request(const endpoint_labels& ep, size_t request_bytes);
  /// The first response chunk of a request that arrived `since` ago.
  void on_first_response(const endpoint_labels& ep, std::chrono::duration<double> since);
  /// A response chunk of `bytes` went out.
  void on_response_bytes(const endpoint_labels& ep, size_t bytes);
  /// A request ended after `took`: ok, failed with `error`, or cancelled by its client.
  void on_end(const endpoint_labels& ep, std::chrono::duration<double> took);
  void on_error(const endpoint_labels& ep, component_error error);
  void on_cancel(const endpoint_labels& ep);
  /// A request's first chunk: `cached` of its `prompt` tokens came from the
  /// prefix cache (feeds the worker's prefix-cache hit rate).
  void on_prefix_lookup(const endpoint_labels& ep, uint64_t worker, uint32_t prompt, uint32_t cached);
  /// A worker instance's load report (its KV blocks and usage; its KVBM
  /// counters advance by what is new since its last report).
  void on_load(const endpoint_labels& ep, const protocol::load_metrics& load);
  /// The engine steps of one worker instance, its series looked up once (the
  /// hook runs every step): each step's time (wall time; the mocker's
  /// simulated time) and the tokens it computed. Valid while the registry lives.
  class step_observer {
  public:
    void operator()(std::chrono::duration<double> took, uint32_t tokens) const;

  private:
    friend class component_metrics;
    step_observer(histogram& seconds, histogram& tokens) : seconds_(&seconds), tokens_(&tokens) {}
    histogram* seconds_;
    histogram* tokens_;
  };
  [[nodiscard]] step_observer steps_of(const endpoint_labels& ep, uint64_t worker);
  /// Seconds since create(), refreshed on every call of this (before rendering).
  void refresh_uptime();

private:
  component_metrics() = default;
  [[nodiscard]] label_values labels(const endpoint_labels& ep) const;
  [[nodiscard]] label_values worker_labels(const endpoint_labels& ep, uint64_t worker) const;

  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  counter_family* requests_total_ = nullptr;
  counter_family* request_bytes_total_ = nullptr;
  counter_family* response_bytes_total_ = nullptr;
  gauge_family* inflight_requests_ = nullptr;
  histogram_family* request_duration_ = nullptr;
  histogram_family* time_to_first_response_ = nullptr;
  counter_family* errors_total_ = nullptr;
  counter_family* cancellation_total_ = nullptr;
  gauge_family* uptime_seconds_ = nullptr;
  gauge_family* active_blocks_ = nullptr;
  gauge_family* total_blocks_ = nullptr;
  gauge_family* cache_usage_percent_ = nullptr;
  gauge_family* prefix_hit_rate_ = nullptr;
  gauge_family* requests_running_ = nullptr;
  gauge_family* requests_waiting_ = nullptr;
  histogram_family* step_seconds_ = nullptr;
  histogram_family* step_tokens_ = nullptr;
  counter_family* kvbm_matched_tokens_ = nullptr;
  counter_family* kvbm_offload_d2h_ = nullptr;
  counter_family* kvbm_offload_h2d_ = nullptr;
  counter_family* kvbm_onboard_h2d_ = nullptr;
  counter_family* kvbm_onboard_d2d_ = nullptr;
  gauge_family* kvbm_host_hit_rate_ = nullptr;
  gauge_family* kvbm_disk_hit_rate_ = nullptr;
  std::mutex kvbm_mutex_;
  std::map<uint64_t, protocol::kvbm_metrics> kvbm_last_; ///< the last report per worker (counter deltas)
  std::mutex prefix_mutex_;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> prefix_tokens_; ///< worker -> (prompt, cached) totals
};

} // namespace dynamo::metrics
