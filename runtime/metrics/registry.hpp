// A small Prometheus registry: counters, gauges and histograms grouped in
// labelled families, rendered in the text exposition format 0.0.4.
// Used by the frontend (and later the router and workers) for /metrics.
// Thread rules: every method is safe from any thread; a metric reference
// returned by `family::with` stays valid as long as the registry lives (or
// until family::remove drops that series).
#pragma once

#include "runtime/core/error.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::metrics {

/// Whether `s` is a valid Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*).
[[nodiscard]] bool is_metric_name(std::string_view s) noexcept;

/// Values of a series' labels, in the order of the family's label names.
using label_values = std::vector<std::string>;

/// A monotonically increasing value (requests, tokens).
class counter {
public:
  /// Adds `v`; negative values are ignored (a counter never goes down).
  void inc(double v = 1.0) noexcept;
  [[nodiscard]] double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<double> value_{0.0};
};

/// A value that goes up and down (in-flight requests).
class gauge {
public:
  void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void inc(double v = 1.0) noexcept;
  void dec(double v = 1.0) noexcept { inc(-v); }
  [[nodiscard]] double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<double> value_{0.0};
};

/// Counts observations into buckets with upper bounds `le` (inclusive), plus +Inf.
class histogram {
public:
  /// `bounds` must be strictly increasing and finite (the family checks it).
  explicit histogram(std::shared_ptr<const std::vector<double>> bounds);

  void observe(double v) noexcept;

  struct snapshot {
    std::vector<uint64_t> cumulative; ///< one per bound, then +Inf (== count)
    double sum = 0.0;
    uint64_t count = 0;
  };
  /// A consistent copy (buckets, sum and count from the same instant).
  [[nodiscard]] snapshot read() const;

private:
  std::shared_ptr<const std::vector<double>> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_; ///< per bucket, not cumulative; last is +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

enum class metric_kind : uint8_t { counter, gauge, histogram };

/// All series of one metric name. `with(values)` finds or creates a series.
template <class Metric>
class family {
public:
  family(std::string name, std::string help, std::vector<std::string> label_names,
         std::shared_ptr<const std::vector<double>> bounds = nullptr);

  /// The series for `values`. A wrong number of values is a bug: missing values
  /// read as "" and extra ones are dropped, so a metric never takes the server down.
  [[nodiscard]] Metric& with(label_values values);
  /// Shorthand for families without labels.
  [[nodiscard]] Metric& get() { return with({}); }
  /// Drops the series for `values` (a worker that left): it no longer
  /// renders, and references to it that with() returned dangle, so callers
  /// that remove series look them up by with() each time. True when it existed.
  bool remove(label_values values);

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::string& help() const noexcept { return help_; }
  [[nodiscard]] const std::vector<std::string>& label_names() const noexcept { return labels_; }
  /// Bucket upper bounds (histograms only; empty otherwise), without +Inf.
  [[nodiscard]] const std::vector<double>& bounds() const noexcept;

  /// Visits every series in label order (for rendering).
  template <class Fn>
  void for_each(Fn&& fn) const {
    std::lock_guard lock{mutex_};
    for (const auto& [values, metric] : series_)
      fn(values, *metric);
  }

private:
  std::string name_;
  std::string help_;
  std::vector<std::string> labels_;
  std::shared_ptr<const std::vector<double>> bounds_;
  mutable std::mutex mutex_;
  std::map<label_values, std::unique_ptr<Metric>> series_;
};

using counter_family = family<counter>;
using gauge_family = family<gauge>;
using histogram_family = family<histogram>;

/// Stores a family `registry::add_*` returned in `out`; its error when it failed.
template <class T>
[[nodiscard]] caf::error take(expected<T*> in, T*& out) {
  if (!in)
    return std::move(in.error());
  out = *in;
  return {};
}

/// Keeps the first error of a run of registrations, so a create() can
/// register every family and then report one failure:
/// `first_error errs; errs(take(reg.add_counter(...), f)); ... if (errs.error) return errs.error;`
struct first_error {
  caf::error error;
  void operator()(caf::error e) {
    if (!error && e)
      error = std::move(e);
  }
};

class registry {
public:
  /// Content type of `render()` output.
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

  /// Registers a family. Errors (errc::invalid_argument): a name or label that
  /// is not a valid Prometheus identifier, a duplicate name, a histogram label
  /// named "le", or bucket bounds that are not finite and strictly increasing.
  [[nodiscard]] expected<counter_family*> add_counter(std::string name, std::string help,
                                                      std::vector<std::string> labels = {});
  [[nodiscard]] expected<gauge_family*> add_gauge(std::string name, std::string help,
                                                  std::vector<std::string> labels = {});
  [[nodiscard]] expected<histogram_family*> add_histogram(std::string name, std::string help,
                                                          std::vector<std::string> labels,
                                                          std::vector<double> bounds);

  /// Text exposition format 0.0.4: families in registration order, series in
  /// label order. A labelled family with no series yet renders its HELP and
  /// TYPE lines only, so scrapers see every family from the first scrape.
  [[nodiscard]] std::string render() const;

  /// Every sample name the families can render, registered or not yet
  /// observed: a counter's or gauge's name, a histogram's name_bucket,
  /// name_sum and name_count (what PromQL queries name).
  [[nodiscard]] std::vector<std::string> sample_names() const;

private:
  struct entry {
    metric_kind kind;
    std::unique_ptr<counter_family> counters;
    std::unique_ptr<gauge_family> gauges;
    std::unique_ptr<histogram_family> histograms;
  };
  [[nodiscard]] caf::error check_new(const std::string& name, const std::vector<std::string>& labels,
                                     metric_kind kind) const;

  mutable std::mutex mutex_;
  std::vector<entry> entries_;
};

/// Prometheus label-value escaping: backslash, double quote and newline.
[[nodiscard]] std::string escape_label_value(std::string_view v);
/// HELP-text escaping: backslash and newline.
[[nodiscard]] std::string escape_help(std::string_view v);
/// Sample value formatting: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
[[nodiscard]] std::string format_value(double v);

} // namespace dynamo::metrics
