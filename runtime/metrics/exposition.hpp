// Reads the Prometheus text exposition format (what every /metrics page
// serves): one sample per line with its labels. The tree's one reader: the
// planner's traffic (runtime/plan/throughput) and the benchmarks' counters
// (dynamo-bench, dynamo-disagg-bench, dynamo-soak). Pure; any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dynamo::metrics {

struct exposition_sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels; ///< unescaped values, in page order
  double value = 0;                                         ///< may be +-Inf or NaN

  /// The value of label `key`; "" when absent (as Prometheus reads it).
  [[nodiscard]] std::string_view label(std::string_view key) const;
};

/// Every sample of `text`, in order; comments (#) and blank lines are skipped,
/// a timestamp after the value is ignored. errc::malformed_message naming the
/// line for a line that is not a sample.
[[nodiscard]] expected<std::vector<exposition_sample>> parse_exposition(std::string_view text);

using label_match = std::pair<std::string_view, std::string_view>;

/// The sum of the finite samples named `name` that carry every `match`
/// label=value; nullopt when there is none.
[[nodiscard]] std::optional<double> sum_samples(std::span<const exposition_sample> samples, std::string_view name,
                                                std::initializer_list<label_match> match = {});

} // namespace dynamo::metrics
