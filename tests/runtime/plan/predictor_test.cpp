#include "runtime/plan/predictor.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

using namespace dynamo;
using namespace dynamo::plan;
namespace tt = boost::test_tools;

namespace {

predictor make(predictor_kind k, uint32_t window = 3, uint32_t min_points = 1) {
  predictor_config c;
  c.kind = k;
  c.window = window;
  c.min_points = min_points;
  return predictor{c};
}

} // namespace

BOOST_AUTO_TEST_SUITE(predictor_suite)

BOOST_AUTO_TEST_CASE(kinds_parse_and_print) {
  BOOST_TEST(to_string(*parse_predictor_kind("kalman")) == "kalman");
  BOOST_TEST(to_string(*parse_predictor_kind("moving_average")) == "moving_average");
  BOOST_TEST(to_string(*parse_predictor_kind("constant")) == "constant");
  auto bad = parse_predictor_kind("arima");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(message_of(bad.error()) == "predictor 'arima' is not one of constant|moving_average|kalman");
}

BOOST_AUTO_TEST_CASE(empty_predicts_zero) {
  for (auto k : {predictor_kind::constant, predictor_kind::moving_average, predictor_kind::kalman})
    BOOST_TEST(make(k).predict() == 0.0);
}

BOOST_AUTO_TEST_CASE(leading_zeros_are_skipped_and_nan_reads_as_zero) {
  auto p = make(predictor_kind::moving_average, 3);
  p.observe(0);
  p.observe(std::numeric_limits<double>::quiet_NaN()); // a leading zero too
  p.observe(0);
  BOOST_TEST(p.size() == 0u);
  p.observe(3);
  p.observe(std::numeric_limits<double>::infinity()); // 0 once traffic started
  BOOST_TEST(p.size() == 2u);
  BOOST_TEST(p.predict() == 1.5);
}

BOOST_AUTO_TEST_CASE(constant_is_the_last_value) {
  auto p = make(predictor_kind::constant);
  for (double v : {0.2, 0.9, 0.4})
    p.observe(v);
  BOOST_TEST(p.predict() == 0.4);
}

BOOST_AUTO_TEST_CASE(moving_average_over_the_window) {
  auto p = make(predictor_kind::moving_average, 3);
  p.observe(0.5);
  BOOST_TEST(p.predict() == 0.5);
  p.observe(0.5);
  p.observe(2.0);
  BOOST_TEST(p.predict() == 1.0);
  p.observe(2.0); // 0.5 leaves the window
  BOOST_TEST(p.predict() == 1.5);
}

BOOST_AUTO_TEST_CASE(kalman_first_update_by_hand) {
  // x0 = [10, 0], P0 = 1000 I; predict: P = [[2001, 1000], [1000, 1000.1]];
  // S = 2011, K = [2001, 1000] / 2011, innovation 10 -> forecast level + trend.
  auto p = make(predictor_kind::kalman);
  p.observe(10);
  BOOST_TEST(p.predict() == 10.0);
  p.observe(20);
  double expected = 10 + 10 * 2001.0 / 2011 + 10 * 1000.0 / 2011;
  BOOST_TEST(p.predict() == expected, tt::tolerance(1e-12));
  BOOST_TEST(p.predict() == 24.922923918448532, tt::tolerance(1e-12)); // numpy, filterpy's equations
}

BOOST_AUTO_TEST_CASE(kalman_matches_the_reference_filter) {
  // Reference values: numpy with filterpy's KalmanFilter equations (Joseph form).
  auto p = make(predictor_kind::kalman);
  for (double v : {10, 20, 30, 40, 50})
    p.observe(v);
  BOOST_TEST(p.predict() == 59.9478225545025, tt::tolerance(1e-9));
  auto q = make(predictor_kind::kalman);
  for (double v : {0.5, 0.9, 0.2, 0.7, 0.4})
    q.observe(v);
  BOOST_TEST(q.predict() == 0.3044688581725593, tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(kalman_follows_a_trend_and_holds_a_level) {
  auto ramp = make(predictor_kind::kalman);
  for (int v = 1; v <= 30; ++v)
    ramp.observe(v);
  BOOST_TEST(ramp.predict() == 31.000002887692858, tt::tolerance(1e-9));
  auto flat = make(predictor_kind::kalman);
  for (int i = 0; i < 6; ++i)
    flat.observe(4);
  BOOST_TEST(flat.predict() == 4.0); // no innovation, no trend: exact
}

BOOST_AUTO_TEST_CASE(kalman_predicts_the_last_value_below_min_points) {
  auto p = make(predictor_kind::kalman, 3, 5);
  for (double v : {10, 20, 30, 40})
    p.observe(v);
  BOOST_TEST(p.predict() == 40.0);
  p.observe(50);
  BOOST_TEST(p.predict() == 59.9478225545025, tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(kalman_never_predicts_negative_load) {
  auto p = make(predictor_kind::kalman);
  for (double v : {100.0, 50.0, 1.0, 0.5, 0.1})
    p.observe(v);
  BOOST_TEST(p.predict() == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
