#include "runtime/metrics/log_buckets.hpp"

#include <cmath>

namespace dynamo::metrics {

double round_to_significant(double value, int digits) {
  if (value == 0.0 || !std::isfinite(value))
    return value;
  double magnitude = std::floor(std::log10(std::fabs(value)));
  double scale = std::pow(10.0, digits - 1 - magnitude);
  return std::round(value * scale) / scale;
}

std::vector<double> log_buckets(double min, double max, size_t count) {
  std::vector<double> out;
  if (count == 0)
    return out;
  out.push_back(0.0);
  if (count == 1 || !(min > 0.0) || !(max > min))
    return out;
  const double log_min = std::log(min);
  const double log_max = std::log(max);
  for (size_t i = 1; i < count; ++i) {
    double t = static_cast<double>(i) / static_cast<double>(count - 1);
    double v = round_to_significant(std::exp(log_min + (log_max - log_min) * t), 2);
    if (v != out.back())
      out.push_back(v);
  }
  return out;
}

} // namespace dynamo::metrics
