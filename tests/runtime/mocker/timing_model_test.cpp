#include "runtime/mocker/timing_model.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace std::chrono_literals;

namespace {

engine::batch_entry entry(uint32_t n, uint32_t blocks, bool sample) {
  engine::batch_entry e;
  e.tokens.assign(n, 1);
  e.block_table.assign(blocks, 0);
  e.sample = sample;
  return e;
}

const engine::kv_geometry geo{16, 100};

} // namespace

BOOST_AUTO_TEST_SUITE(timing_model)

BOOST_AUTO_TEST_CASE(prefill_polynomial_matches_dynamo_coefficients) {
  BOOST_TEST(mocker::prefill_ms(0) == 0.0);
  BOOST_TEST(mocker::prefill_ms(1000) == 4.209989e-1 + 15.18344 + 16.50142,
             boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(decode_polynomial_grows_with_kv_usage_and_clamps) {
  BOOST_TEST(mocker::decode_ms(0.0) == 5.74, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(mocker::decode_ms(0.5) == -25.74 * 0.25 + 54.01 * 0.5 + 5.74,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(mocker::decode_ms(1.0) == 34.01, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(mocker::decode_ms(7.0) == mocker::decode_ms(1.0));
  BOOST_TEST(mocker::decode_ms(-1.0) == mocker::decode_ms(0.0));
}

BOOST_AUTO_TEST_CASE(step_time_adds_prefill_and_scaled_decode) {
  engine::batch b;
  b.entries = {entry(1, 30, true), entry(1, 20, true), entry(100, 7, false)};
  // u = 57 / 100 blocks; T = 100 prefill tokens.
  const double ms = mocker::prefill_ms(100) + mocker::decode_ms(0.57);
  BOOST_TEST(mocker::step_time(b, geo, {1.0, 1.0}).count() == std::llround(ms * 1000));
  const double fast = mocker::prefill_ms(100) / 2 + mocker::decode_ms(0.57) / 8;
  BOOST_TEST(mocker::step_time(b, geo, {2.0, 4.0}).count() == std::llround(fast * 1000));
}

BOOST_AUTO_TEST_CASE(prefill_only_step_has_no_decode_term) {
  engine::batch b;
  b.entries = {entry(64, 4, false)};
  BOOST_TEST(mocker::step_time(b, geo, {1.0, 1.0}).count() ==
             std::llround(mocker::prefill_ms(64) * 1000));
}

BOOST_AUTO_TEST_CASE(speedup_zero_means_no_delay) {
  engine::batch b;
  b.entries = {entry(64, 4, true)};
  BOOST_TEST(mocker::step_time(b, geo, {0.0, 1.0}) == 0us);
  BOOST_TEST(mocker::step_time(engine::batch{}, geo, {1.0, 1.0}) == 0us);
}

BOOST_AUTO_TEST_SUITE_END()
