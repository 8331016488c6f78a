// Histogram bucket bounds the way Dynamo generates them, so that dashboards
// written for Dynamo read our histograms unchanged. Pure functions.
#pragma once

#include <cstddef>
#include <vector>

namespace dynamo::metrics {

/// `value` rounded to `digits` significant figures (0 stays 0).
[[nodiscard]] double round_to_significant(double value, int digits);

/// Dynamo's log buckets: 0, then `count - 1` values log-spaced from `min`
/// (exclusive) to `max` (inclusive), i.e. exp(ln min + (ln max - ln min) * i / (count - 1))
/// for i = 1 .. count-1, each rounded to 2 significant figures, consecutive
/// duplicates removed. count 0 gives {}, count 1 gives {0}. REQUIRES: 0 < min < max.
[[nodiscard]] std::vector<double> log_buckets(double min, double max, size_t count);

/// Range and count of one log-bucket histogram (Dynamo's DYN_METRICS_<X>_{MIN,MAX,COUNT}).
struct bucket_spec {
  double min;
  double max;
  size_t count;
  [[nodiscard]] std::vector<double> bounds() const { return log_buckets(min, max, count); }
};

} // namespace dynamo::metrics
