// Load predictors over one series (research/dynamo.md 6.3): constant (last
// value), moving average, and a local-linear-trend Kalman filter. Like
// Dynamo's, they skip the leading run of zeros (idle start) and read non-finite
// values as 0. Used by plan::planner, one per pool and signal. Pure values;
// not thread-safe (one owner).
#pragma once

#include "runtime/core/error.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string_view>

namespace dynamo::plan {

enum class predictor_kind : uint8_t { constant, moving_average, kalman };

[[nodiscard]] std::string_view to_string(predictor_kind k) noexcept;
/// "constant" | "moving_average" | "kalman"; errc::invalid_argument otherwise.
[[nodiscard]] expected<predictor_kind> parse_predictor_kind(std::string_view text);

struct predictor_config {
  predictor_kind kind = predictor_kind::moving_average;
  uint32_t window = 3;      ///< moving_average: points averaged (>= 1)
  double q_level = 1.0;     ///< kalman: process noise of the level
  double q_trend = 0.1;     ///< kalman: process noise of the trend
  double r = 10.0;          ///< kalman: measurement noise
  uint32_t min_points = 5;  ///< kalman: below this many points, predict the last value
};

class predictor {
public:
  explicit predictor(predictor_config cfg);

  /// Adds one observation (one per planner interval).
  void observe(double value);
  /// The forecast of the next value; 0 before any (non-idle) observation.
  [[nodiscard]] double predict() const noexcept;
  /// Observations kept since the idle start ended.
  [[nodiscard]] size_t size() const noexcept { return count_; }
  [[nodiscard]] const predictor_config& config() const noexcept { return cfg_; }

private:
  predictor_config cfg_;
  size_t count_ = 0;
  double last_ = 0.0;
  std::deque<double> recent_; ///< moving_average window
  // Kalman state: x = [level, trend], P (2x2, symmetric).
  double level_ = 0.0, trend_ = 0.0;
  double p00_ = 1000.0, p01_ = 0.0, p11_ = 1000.0;
};

} // namespace dynamo::plan
