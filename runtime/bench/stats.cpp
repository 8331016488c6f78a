#include "runtime/bench/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dynamo::bench {

void sample_set::merge(const sample_set& other) {
  values_.insert(values_.end(), other.values_.begin(), other.values_.end());
  sorted_ = false;
}

void sample_set::sort() const {
  if (!sorted_) {
    std::sort(values_.begin(), values_.end());
    sorted_ = true;
  }
}

double sample_set::percentile(double p) const {
  if (values_.empty())
    return 0;
  sort();
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values_.size())));
  return values_[rank == 0 ? 0 : rank - 1];
}

double weighted_percentile(std::vector<std::pair<double, uint64_t>>& samples, double p) {
  uint64_t total = 0;
  for (const auto& s : samples)
    total += s.second;
  if (total == 0)
    return 0;
  std::sort(samples.begin(), samples.end());
  p = std::clamp(p, 0.0, 100.0);
  const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total))));
  uint64_t seen = 0;
  for (const auto& [v, w] : samples)
    if ((seen += w) >= rank)
      return v;
  return samples.back().first;
}

summary sample_set::summarize() const {
  summary s;
  s.count = values_.size();
  if (values_.empty())
    return s;
  sort();
  s.mean = std::accumulate(values_.begin(), values_.end(), 0.0) / static_cast<double>(s.count);
  s.min = values_.front();
  s.max = values_.back();
  s.p50 = percentile(50);
  s.p90 = percentile(90);
  s.p95 = percentile(95);
  s.p99 = percentile(99);
  return s;
}

std::string to_json(const summary& s, double scale) {
  return fmt::format(R"({{"count":{},"mean":{:.4f},"min":{:.4f},"p50":{:.4f},"p90":{:.4f},"p95":{:.4f},"p99":{:.4f},"max":{:.4f}}})",
                     s.count, s.mean * scale, s.min * scale, s.p50 * scale, s.p90 * scale,
                     s.p95 * scale, s.p99 * scale, s.max * scale);
}

} // namespace dynamo::bench
