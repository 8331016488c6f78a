// The traffic dynamo-configure simulates: prompt/output length distributions,
// a Poisson request rate and shared prefixes, or a Mooncake-style trace,
// turned into a fixed list of requests every candidate deployment replays.
// Called by dynamo-configure and its benchmark. Pure values and functions.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/route/workload.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::configure {

/// A token-length distribution; draws are rounded and at least 1.
struct length_dist {
  enum class kind : uint8_t { fixed, normal, uniform } shape = kind::fixed;
  double a = 1; ///< fixed: the value; normal: mean; uniform: low (inclusive)
  double b = 0; ///< normal: standard deviation; uniform: high (inclusive)
  [[nodiscard]] double mean() const noexcept;
};
/// "fixed:N", "normal:MEAN,SD" or "uniform:LO,HI"; a bare "N" is fixed.
/// errc::invalid_argument naming what is wrong.
[[nodiscard]] expected<length_dist> parse_length_dist(std::string_view text);
[[nodiscard]] std::string to_string(const length_dist& d);

/// Synthetic traffic.
struct traffic_spec {
  length_dist isl{length_dist::kind::fixed, 512, 0};
  length_dist osl{length_dist::kind::fixed, 128, 0};
  double rate = 10;              ///< requests per second, Poisson arrivals
  uint32_t requests = 400;       ///< simulated per candidate
  /// Shared prefixes (system prompts): each request picks one of
  /// `prefix_groups` uniformly and its first `prefix_share` of the prompt is
  /// that group's (0 groups: every prompt is unique).
  uint32_t prefix_groups = 0;
  double prefix_share = 0;
  uint64_t seed = 1;
};

/// One simulated request. Its prompt is `num_blocks` blocks of `block_tokens`
/// (the last may be partial) named by chained ids: equal ids at the same
/// position mean an equal prefix up to there.
struct sim_request {
  double arrival_ms = 0;
  uint32_t isl = 1;
  uint32_t osl = 1;
  uint32_t first_block = 0; ///< into request_set::block_ids
  uint32_t num_blocks = 0;
};

struct request_set {
  std::vector<sim_request> requests;  ///< by arrival
  std::vector<uint64_t> block_ids;    ///< chained prefix ids, all requests
  uint32_t block_tokens = 64;         ///< granularity of prefix sharing
  [[nodiscard]] double mean_isl() const noexcept;
  [[nodiscard]] double mean_osl() const noexcept;
  [[nodiscard]] double duration_s() const noexcept; ///< first to last arrival
};

/// Draws `spec.requests` requests (deterministic for a seed).
[[nodiscard]] request_set make_requests(const traffic_spec& spec);

/// A trace's records (route::read_jsonl) as requests: hash ids chained into
/// prefix ids at `trace_block_size` tokens each. rate > 0 rescales the
/// timestamps to that mean request rate; `limit` > 0 keeps the first records.
[[nodiscard]] request_set requests_from_trace(const std::vector<route::trace_record>& records,
                                              uint32_t trace_block_size, double rate, size_t limit);

/// `set` as trace records (timestamps rounded to whole ms; hash ids: the
/// requests' block ids, at set.block_tokens tokens each), for
/// dynamo-configure --write-trace: requests_from_trace(to_trace(set),
/// set.block_tokens, 0, 0) is the same traffic, which dynamo-bench --trace
/// then sends.
[[nodiscard]] std::vector<route::trace_record> to_trace(const request_set& set);

} // namespace dynamo::configure
