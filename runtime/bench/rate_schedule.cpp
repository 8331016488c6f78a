#include "runtime/bench/rate_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace dynamo::bench {

namespace {

std::optional<double> number(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

} // namespace

rate_schedule::rate_schedule(std::vector<point> p) : points_(std::move(p)) {
  for (const point& x : points_)
    max_rate_ = std::max(max_rate_, x.rate);
}

expected<rate_schedule> rate_schedule::parse(std::string_view text) {
  std::vector<point> pts;
  auto bad = [&](std::string_view item, std::string_view why) {
    return make_error(errc::config_error, fmt::format("rate schedule point '{}': {}", item, why));
  };
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      return bad(item, "expected seconds:rate");
    const auto t = number(item.substr(0, colon));
    const auto r = number(item.substr(colon + 1));
    if (!t || !r)
      return bad(item, "not two numbers");
    if (pts.empty() ? *t != 0 : *t <= pts.back().t)
      return bad(item, pts.empty() ? "the first point is at 0" : "times must increase");
    if (*r < 0)
      return bad(item, "a rate is >= 0");
    pts.push_back({*t, *r});
  }
  if (pts.size() < 2)
    return make_error(errc::config_error, "rate schedule: at least two points (start and end)");
  if (std::all_of(pts.begin(), pts.end(), [](const point& p) { return p.rate == 0; }))
    return make_error(errc::config_error, "rate schedule: every rate is 0");
  return rate_schedule{std::move(pts)};
}

double rate_schedule::rate_at(double t) const noexcept {
  if (t < 0 || t > end())
    return 0;
  auto hi = std::upper_bound(points_.begin(), points_.end(), t, [](double v, const point& p) { return v < p.t; });
  if (hi == points_.end())
    return points_.back().rate;
  const point& b = *hi;
  const point& a = *(hi - 1);
  return a.rate + (b.rate - a.rate) * (t - a.t) / (b.t - a.t);
}

double rate_schedule::expected_requests() const noexcept {
  double n = 0;
  for (size_t i = 1; i < points_.size(); ++i)
    n += (points_[i].t - points_[i - 1].t) * (points_[i].rate + points_[i - 1].rate) / 2;
  return n;
}

std::optional<double> rate_schedule::next_arrival(double t, std::mt19937_64& rng) const {
  // Thinning (Lewis and Shedler): candidates at the peak rate, each kept with
  // probability rate(t) / peak.
  std::exponential_distribution<double> gap(max_rate_);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (;;) {
    t += gap(rng);
    if (t > end())
      return std::nullopt;
    if (u(rng) * max_rate_ < rate_at(t))
      return t;
  }
}

} // namespace dynamo::bench
