// Latency statistics for benchmarks: collects samples, reports mean and
// percentiles (nearest-rank). One instance per thread or guarded by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dynamo::bench {

struct summary {
  size_t count = 0;
  double mean = 0, min = 0, max = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0;
};

class sample_set {
public:
  void add(double v) { values_.push_back(v); }
  void merge(const sample_set& other);
  [[nodiscard]] size_t size() const noexcept { return values_.size(); }
  /// Nearest-rank percentile, p in [0, 100]; 0 when empty.
  [[nodiscard]] double percentile(double p) const;
  [[nodiscard]] summary summarize() const;

private:
  mutable std::vector<double> values_;
  mutable bool sorted_ = false;
  void sort() const;
};

/// The same nearest-rank percentile over (value, weight) samples, as if each
/// value appeared weight times (a simulator's token gaps: one per step, weighted
/// by the batch). Sorts `samples`; 0 when the weights sum to 0.
[[nodiscard]] double weighted_percentile(std::vector<std::pair<double, uint64_t>>& samples, double p);

/// `{"count":..,"mean":..,"p50":..,...}` with values scaled by `scale` (e.g. 1e3 for ms).
[[nodiscard]] std::string to_json(const summary& s, double scale = 1.0);

} // namespace dynamo::bench
