#include "runtime/metrics/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <type_traits>

namespace dynamo::metrics {

bool is_metric_name(std::string_view s) noexcept {
  if (s.empty())
    return false;
  auto first = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; };
  auto rest = [&](char c) { return first(c) || std::isdigit(static_cast<unsigned char>(c)); };
  return first(s[0]) && std::all_of(s.begin() + 1, s.end(), rest);
}

namespace {

bool is_label_name(std::string_view s) {
  if (s.empty() || s.starts_with("__"))
    return false;
  auto first = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto rest = [&](char c) { return first(c) || std::isdigit(static_cast<unsigned char>(c)); };
  return first(s[0]) && std::all_of(s.begin() + 1, s.end(), rest);
}

void add_atomic(std::atomic<double>& a, double v) noexcept {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed))
    ;
}

// `{a="x",b="y"}` (plus an optional extra pair such as le), or "" without labels.
std::string label_block(const std::vector<std::string>& names, const label_values& values,
                        std::string_view extra_name = {}, std::string_view extra_value = {}) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i];
    out += "=\"";
    out += escape_label_value(i < values.size() ? values[i] : std::string{});
    out += '"';
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  if (!out.empty())
    out += '}';
  return out;
}

void render_header(std::string& out, const std::string& name, const std::string& help,
                   std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += escape_help(help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

template <class Family>
void render_scalar(std::string& out, const Family& f, std::string_view type) {
  render_header(out, f.name(), f.help(), type);
  f.for_each([&](const label_values& values, const auto& m) {
    out += f.name();
    out += label_block(f.label_names(), values);
    out += ' ';
    out += format_value(m.value());
    out += '\n';
  });
}

void render_histogram(std::string& out, const histogram_family& f,
                      const std::vector<double>& bounds) {
  render_header(out, f.name(), f.help(), "histogram");
  f.for_each([&](const label_values& values, const histogram& h) {
    auto snap = h.read();
    for (size_t i = 0; i <= bounds.size(); ++i) {
      auto le = i < bounds.size() ? format_value(bounds[i]) : std::string{"+Inf"};
      out += f.name();
      out += "_bucket";
      out += label_block(f.label_names(), values, "le", le);
      out += ' ';
      out += std::to_string(snap.cumulative[i]);
      out += '\n';
    }
    auto labels = label_block(f.label_names(), values);
    out += fmt::format("{}_sum{} {}\n", f.name(), labels, format_value(snap.sum));
    out += fmt::format("{}_count{} {}\n", f.name(), labels, snap.count);
  });
}

} // namespace

// -- metrics ------------------------------------------------------------------

void counter::inc(double v) noexcept {
  if (v > 0.0)
    add_atomic(value_, v);
}

void gauge::inc(double v) noexcept { add_atomic(value_, v); }

histogram::histogram(std::shared_ptr<const std::vector<double>> bounds)
  : bounds_(std::move(bounds)), counts_(bounds_->size() + 1, 0) {}

void histogram::observe(double v) noexcept {
  // First bound >= v: Prometheus buckets are "less than or equal".
  auto it = std::lower_bound(bounds_->begin(), bounds_->end(), v);
  auto idx = static_cast<size_t>(it - bounds_->begin());
  std::lock_guard lock{mutex_};
  ++counts_[idx];
  sum_ += v;
  ++count_;
}

histogram::snapshot histogram::read() const {
  snapshot s;
  std::lock_guard lock{mutex_};
  s.cumulative.reserve(counts_.size());
  uint64_t running = 0;
  for (auto c : counts_)
    s.cumulative.push_back(running += c);
  s.sum = sum_;
  s.count = count_;
  return s;
}

// -- family -------------------------------------------------------------------

template <class Metric>
family<Metric>::family(std::string name, std::string help, std::vector<std::string> label_names,
                       std::shared_ptr<const std::vector<double>> bounds)
  : name_(std::move(name)), help_(std::move(help)), labels_(std::move(label_names)),
    bounds_(std::move(bounds)) {}

template <class Metric>
const std::vector<double>& family<Metric>::bounds() const noexcept {
  static const std::vector<double> none;
  return bounds_ ? *bounds_ : none;
}

template <class Metric>
Metric& family<Metric>::with(label_values values) {
  values.resize(labels_.size());
  std::lock_guard lock{mutex_};
  auto it = series_.find(values);
  if (it == series_.end()) {
    std::unique_ptr<Metric> m;
    if constexpr (std::is_same_v<Metric, histogram>)
      m = std::make_unique<histogram>(bounds_);
    else
      m = std::make_unique<Metric>();
    it = series_.emplace(std::move(values), std::move(m)).first;
  }
  return *it->second;
}

template <class Metric>
bool family<Metric>::remove(label_values values) {
  values.resize(labels_.size());
  std::lock_guard lock{mutex_};
  return series_.erase(values) > 0;
}

template class family<counter>;
template class family<gauge>;
template class family<histogram>;

// -- registry -----------------------------------------------------------------

caf::error registry::check_new(const std::string& name, const std::vector<std::string>& labels,
                               metric_kind kind) const {
  if (!is_metric_name(name))
    return make_error(errc::invalid_argument, "invalid metric name '" + name + "'");
  for (const auto& l : labels) {
    if (!is_label_name(l))
      return make_error(errc::invalid_argument, "invalid label name '" + l + "' in " + name);
    if (kind == metric_kind::histogram && l == "le")
      return make_error(errc::invalid_argument, "histogram " + name + " may not use label 'le'");
  }
  if (std::set<std::string>(labels.begin(), labels.end()).size() != labels.size())
    return make_error(errc::invalid_argument, "duplicate label name in " + name);
  for (const auto& e : entries_) {
    const std::string& existing = e.kind == metric_kind::counter ? e.counters->name()
                                  : e.kind == metric_kind::gauge ? e.gauges->name()
                                                                 : e.histograms->name();
    if (existing == name)
      return make_error(errc::invalid_argument, "metric " + name + " is already registered");
  }
  return {};
}

expected<counter_family*> registry::add_counter(std::string name, std::string help,
                                                std::vector<std::string> labels) {
  std::lock_guard lock{mutex_};
  if (auto err = check_new(name, labels, metric_kind::counter))
    return err;
  entry e{metric_kind::counter, nullptr, nullptr, nullptr};
  e.counters = std::make_unique<counter_family>(std::move(name), std::move(help), std::move(labels));
  auto* out = e.counters.get();
  if (out->label_names().empty())
    (void)out->get(); // an unlabelled series exists from the start (renders 0)
  entries_.push_back(std::move(e));
  return out;
}

expected<gauge_family*> registry::add_gauge(std::string name, std::string help,
                                            std::vector<std::string> labels) {
  std::lock_guard lock{mutex_};
  if (auto err = check_new(name, labels, metric_kind::gauge))
    return err;
  entry e{metric_kind::gauge, nullptr, nullptr, nullptr};
  e.gauges = std::make_unique<gauge_family>(std::move(name), std::move(help), std::move(labels));
  auto* out = e.gauges.get();
  if (out->label_names().empty())
    (void)out->get();
  entries_.push_back(std::move(e));
  return out;
}

expected<histogram_family*> registry::add_histogram(std::string name, std::string help,
                                                    std::vector<std::string> labels,
                                                    std::vector<double> bounds) {
  std::lock_guard lock{mutex_};
  if (auto err = check_new(name, labels, metric_kind::histogram))
    return err;
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
      return make_error(errc::invalid_argument,
                        "histogram " + name + " needs finite, strictly increasing bounds");
  }
  auto shared = std::make_shared<const std::vector<double>>(std::move(bounds));
  entry e{metric_kind::histogram, nullptr, nullptr, nullptr};
  e.histograms = std::make_unique<histogram_family>(std::move(name), std::move(help),
                                                    std::move(labels), std::move(shared));
  auto* out = e.histograms.get();
  if (out->label_names().empty())
    (void)out->get();
  entries_.push_back(std::move(e));
  return out;
}

std::string registry::render() const {
  std::string out;
  std::lock_guard lock{mutex_};
  for (const auto& e : entries_) {
    switch (e.kind) {
      case metric_kind::counter: render_scalar(out, *e.counters, "counter"); break;
      case metric_kind::gauge: render_scalar(out, *e.gauges, "gauge"); break;
      case metric_kind::histogram: {
        render_histogram(out, *e.histograms, e.histograms->bounds());
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> registry::sample_names() const {
  std::vector<std::string> out;
  std::lock_guard lock{mutex_};
  for (const auto& e : entries_) {
    switch (e.kind) {
      case metric_kind::counter: out.push_back(e.counters->name()); break;
      case metric_kind::gauge: out.push_back(e.gauges->name()); break;
      case metric_kind::histogram:
        for (const char* suffix : {"_bucket", "_sum", "_count"})
          out.push_back(e.histograms->name() + suffix);
        break;
    }
  }
  return out;
}

// -- formatting ---------------------------------------------------------------

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

} // namespace dynamo::metrics
