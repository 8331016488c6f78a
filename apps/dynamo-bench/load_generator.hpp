// dynamo-bench's load generator: drives an OpenAI-compatible server with
// synthetic requests at a fixed concurrency (closed loop) or a Poisson request
// rate (open loop), streaming every response, and summarises TTFT, ITL,
// end-to-end latency and throughput, overall and per traffic class (short
// chat requests vs long prompts), and optionally (a rate schedule, SLA
// targets, a replica count) SLA attainment over time and GPU-seconds. Used by dynamo-bench and dynamo-disagg-bench;
// run_load() blocks the calling thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/core/tls.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace dynamo::bench {

struct load_config {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  /// Set: the server speaks HTTPS (its certificate checked against ca_file,
  /// "" = the system's trust store); client cert_file/key_file when it asks.
  std::optional<tls_files> tls;
  std::string model;                 ///< empty: the first of GET /v1/models
  std::string endpoint = "completions"; ///< "completions" or "chat"
  uint32_t concurrency = 16;         ///< in-flight cap (closed loop when request_rate == 0)
  double request_rate = 0;           ///< requests/s, Poisson arrivals; 0 = closed loop
  uint32_t num_requests = 200;
  uint32_t warmup_requests = 0;      ///< sent first, not measured
  uint32_t isl = 128;                ///< input tokens (token-id prompts) or ~words (chat)
  uint32_t osl = 64;                 ///< output tokens (max_tokens with ignore_eos)
  /// Traffic mix: each request is "long" (long_isl / long_osl) with this
  /// probability, drawn from the seeded RNG, else "short" (isl / osl).
  double long_fraction = 0;
  uint32_t long_isl = 4096;
  uint32_t long_osl = 16;
  uint32_t token_lo = 32, token_hi = 126; ///< range of random prompt token ids
  uint64_t seed = 1;
  /// > 0: Poisson gaps from their own RNG seeded with this, so that they are
  /// dynamo-configure --seed's arrivals for fixed lengths (its traffic draws
  /// nothing else then); 0: from the prompts' RNG.
  uint64_t arrival_seed = 0;
  uint32_t io_threads = 1;
  /// A Mooncake-style JSONL trace (route::read_jsonl) to replay instead of
  /// synthetic traffic (completions only): each record's arrival
  /// (route::trace_arrivals_ms, rescaled to trace_rate requests/s when > 0),
  /// input_length prompt tokens synthesized from its hash_ids at
  /// trace_block_size tokens each (equal ids, equal blocks), and
  /// output_length as max_tokens. num_requests > 0 keeps the first ones.
  /// dynamo-configure --trace (or --write-trace) simulates the same requests.
  std::string trace_path;
  uint32_t trace_block_size = 512;
  double trace_rate = 0;
  std::string label;
  /// Open loop whose rate follows "t:rate,..." (runtime/bench/rate_schedule):
  /// the run lasts the schedule; num_requests and request_rate are unused.
  /// concurrency still caps requests in flight: set it high.
  std::string rate_schedule;
  /// Both > 0: report the share of requests meeting both targets (TTFT, and
  /// the request's mean ITL), overall and per timeline window.
  double sla_ttft_ms = 0;
  double sla_itl_ms = 0;
  /// A /metrics URL (the planner's system server) whose
  /// dynamo_planner_observed_replicas is summed once a second: GPU-seconds.
  std::string replicas_url;
  double static_gpus = 0;      ///< without replicas_url: GPU-seconds = this x duration
  double gpus_per_replica = 1;
  double window_s = 10;        ///< timeline window (schedule runs)
};

/// config_error naming the first bad field, if any.
[[nodiscard]] expected<void> validate(const load_config& cfg);

/// The server's base URL as the reports name it ("http://host:port", https
/// with TLS).
[[nodiscard]] std::string report_url(const load_config& cfg);

/// Runs the benchmark and returns the JSON report: the overall fields
/// (completed, ttft_ms, itl_ms, ...) and "classes": {"short": .., "long": ..}.
[[nodiscard]] expected<std::string> run_load(const load_config& cfg);

} // namespace dynamo::bench
