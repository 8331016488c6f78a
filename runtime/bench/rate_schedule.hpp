// A request rate that changes over time, for open-loop load (dynamo-bench
// --rate-schedule): points (seconds from start, requests/s), linear in between,
// and Poisson arrivals under it (a non-homogeneous Poisson process, drawn by
// thinning). Pure; one schedule per driver thread.
#pragma once

#include "runtime/core/error.hpp"

#include <optional>
#include <random>
#include <string_view>
#include <vector>

namespace dynamo::bench {

class rate_schedule {
public:
  struct point {
    double t = 0;    ///< seconds from the start
    double rate = 0; ///< requests/s
  };

  /// "t:rate,t:rate,...", e.g. "0:2,60:16,120:2": times strictly increasing
  /// from 0, rates >= 0 and not all 0. config_error naming the bad point.
  [[nodiscard]] static expected<rate_schedule> parse(std::string_view text);

  /// The rate at `t` (0 outside [0, end()]).
  [[nodiscard]] double rate_at(double t) const noexcept;
  /// Seconds from the start to the last point.
  [[nodiscard]] double end() const noexcept { return points_.back().t; }
  /// Requests expected over the whole schedule (its integral).
  [[nodiscard]] double expected_requests() const noexcept;
  /// The next arrival after `t`, or nullopt when none falls before end().
  [[nodiscard]] std::optional<double> next_arrival(double t, std::mt19937_64& rng) const;

  [[nodiscard]] const std::vector<point>& points() const noexcept { return points_; }

private:
  explicit rate_schedule(std::vector<point> p);
  std::vector<point> points_;
  double max_rate_ = 0;
};

} // namespace dynamo::bench
