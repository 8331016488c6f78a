#include "runtime/plan/predictor.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace dynamo::plan {

std::string_view to_string(predictor_kind k) noexcept {
  switch (k) {
    case predictor_kind::constant: return "constant";
    case predictor_kind::moving_average: return "moving_average";
    case predictor_kind::kalman: return "kalman";
  }
  return "unknown";
}

expected<predictor_kind> parse_predictor_kind(std::string_view text) {
  if (text == "constant")
    return predictor_kind::constant;
  if (text == "moving_average")
    return predictor_kind::moving_average;
  if (text == "kalman")
    return predictor_kind::kalman;
  return make_error(errc::invalid_argument,
                    "predictor '" + std::string{text} + "' is not one of constant|moving_average|kalman");
}

predictor::predictor(predictor_config cfg) : cfg_(cfg) {
  cfg_.window = std::max<uint32_t>(1, cfg_.window);
}

void predictor::observe(double value) {
  if (!std::isfinite(value))
    value = 0.0;
  if (count_ == 0 && value == 0.0)
    return; // idle start: leading zeros carry no information about load
  ++count_;
  last_ = value;
  recent_.push_back(value);
  while (recent_.size() > cfg_.window)
    recent_.pop_front();

  // Local linear trend: x = [level, trend], F = [[1,1],[0,1]], H = [1,0].
  if (count_ == 1) {
    level_ = value;
    trend_ = 0.0;
    return; // P stays at its prior, 1000 I
  }
  // Predict: x = F x, P = F P F' + Q.
  level_ += trend_;
  double a = p00_, b = p01_, c = p11_;
  p00_ = a + 2 * b + c + cfg_.q_level;
  p01_ = b + c;
  p11_ = c + cfg_.q_trend;
  // Update with z = value: S = P00 + r, K = P H' / S.
  double s = p00_ + cfg_.r;
  double k0 = p00_ / s, k1 = p01_ / s;
  double innovation = value - level_;
  level_ += k0 * innovation;
  trend_ += k1 * innovation;
  double q00 = (1 - k0) * p00_, q01 = (1 - k0) * p01_, q11 = p11_ - k1 * p01_;
  p00_ = q00;
  p01_ = q01;
  p11_ = q11;
}

double predictor::predict() const noexcept {
  if (count_ == 0)
    return 0.0;
  switch (cfg_.kind) {
    case predictor_kind::constant:
      return last_;
    case predictor_kind::moving_average:
      return std::accumulate(recent_.begin(), recent_.end(), 0.0) / static_cast<double>(recent_.size());
    case predictor_kind::kalman:
      if (count_ < cfg_.min_points)
        return last_;
      return std::max(0.0, level_ + trend_); // a load is never negative
  }
  return last_;
}

} // namespace dynamo::plan
