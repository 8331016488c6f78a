// The throughput (SLA) side of the planner, simplified from research/dynamo.md
// 6.2: traffic (request rate, ISL, OSL, prefix-hit rate) measured from two
// scrapes of the frontend's Prometheus metrics (dynamo_frontend_*), and the
// replicas that traffic needs under a per-replica capacity model, which the
// planner uses as a lower bound. Pure functions; safe from any thread.
#pragma once

#include "runtime/config/cluster_config.hpp"
#include "runtime/core/error.hpp"
#include "runtime/core/http_url.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::plan {

/// Cumulative counters of one model, as the frontend exports them.
struct traffic_counters {
  double requests = 0;   ///< <prefix>_requests_total, every label set
  double isl_sum = 0;    ///< <prefix>_input_sequence_tokens_sum
  double isl_count = 0;  ///< <prefix>_input_sequence_tokens_count
  double osl_sum = 0;    ///< <prefix>_output_sequence_tokens_sum
  double osl_count = 0;  ///< <prefix>_output_sequence_tokens_count
  double cached_sum = 0; ///< <prefix>_cached_tokens_sum
};

/// Counters per model from a Prometheus text exposition. Series without a
/// `model` label count under "". errc::malformed_message for a sample line
/// that does not parse (name, labels, value).
[[nodiscard]] expected<std::map<std::string, traffic_counters>>
parse_frontend_metrics(std::string_view text, std::string_view prefix = "dynamo_frontend");

/// Traffic over an interval.
struct traffic {
  double request_rate = 0; ///< arrivals per second (prompts seen; else requests ended)
  double isl = 0;          ///< mean input tokens per request
  double osl = 0;          ///< mean output tokens per request
  double kv_hit_rate = 0;  ///< cached / input tokens, in [0, 1]
};

/// The traffic between two scrapes `seconds` apart. std::nullopt when
/// seconds <= 0 or a counter went backwards (the frontend restarted).
/// Means are 0 when no request completed that part in the interval.
[[nodiscard]] std::optional<traffic> traffic_between(const traffic_counters& before,
                                                     const traffic_counters& after, double seconds);

/// What one replica sustains.
struct replica_capacity {
  double prefill_tokens_per_s = 0; ///< 0: unknown
  double decode_tokens_per_s = 0;  ///< output tokens per second at the ITL target; 0: unknown
};

/// Replicas a pool of `role` needs for `t` (before min/max):
///   prefill:    ceil(rate x isl x (1 - hit) / prefill_tokens_per_s)
///   decode:     ceil(rate x osl / decode_tokens_per_s)
///   aggregated: ceil(rate x (isl x (1 - hit) / prefill_tokens_per_s + osl / decode_tokens_per_s))
/// std::nullopt when a capacity the role needs is unknown (0). A demand within
/// 1e-9 of an integer rounds to it (float noise must not add a replica).
[[nodiscard]] std::optional<uint32_t> replicas_needed(config::worker_role role, const traffic& t,
                                                      const replica_capacity& cap);

/// planner.prometheus_url: the PromQL instant query that returns every
/// counter parse_frontend_metrics reads, summed over all frontends, per model
/// and name; and its request target (/api/v1/query?query=..., URL-encoded).
[[nodiscard]] std::string prometheus_traffic_query(std::string_view prefix = "dynamo_frontend");
[[nodiscard]] std::string prometheus_query_target(std::string_view base_path, std::string_view query);

/// A Prometheus query API answer (a vector of {metric: {__name__, model}, value:
/// [time, "v"]}) rewritten as exposition text, so that parse_frontend_metrics
/// reads Prometheus' sums as it reads one frontend. errc::malformed_message
/// for an answer that is not a successful vector.
[[nodiscard]] expected<std::string> prometheus_vector_to_text(std::string_view json);

/// The metrics URL (http:// or https://, e.g. a frontend with frontend.tls)
/// split for the HTTP client (runtime/core/http_url.hpp); port defaults to 80
/// or 443, path to "/metrics". errc::invalid_argument for anything else.
using dynamo::http_url;
[[nodiscard]] expected<http_url> parse_metrics_url(std::string_view url);

} // namespace dynamo::plan
