#include "runtime/engine/stop_check.hpp"
#include "tests/runtime/engine/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using engine::check_stop;
using protocol::finish_reason;

namespace {
protocol::stop_conditions stops(uint32_t max_tokens, uint32_t min_tokens = 0, bool ignore_eos = false) {
  protocol::stop_conditions s;
  s.max_tokens = max_tokens;
  s.min_tokens = min_tokens;
  s.stop_token_ids = {7, 9};
  s.ignore_eos = ignore_eos;
  return s;
}
} // namespace

BOOST_AUTO_TEST_SUITE(stop_check)

BOOST_AUTO_TEST_CASE(ordinary_token_continues) {
  BOOST_TEST(check_stop(5, 1, 11, stops(4), 100) == finish_reason::none);
}

BOOST_AUTO_TEST_CASE(any_stop_token_finishes_with_stop) {
  BOOST_TEST(check_stop(7, 1, 11, stops(4), 100) == finish_reason::stop);
  BOOST_TEST(check_stop(9, 2, 12, stops(4), 100) == finish_reason::stop);
}

BOOST_AUTO_TEST_CASE(stop_token_before_min_tokens_is_ordinary) {
  BOOST_TEST(check_stop(7, 2, 12, stops(10, 3), 100) == finish_reason::none);
  BOOST_TEST(check_stop(7, 3, 13, stops(10, 3), 100) == finish_reason::stop);
}

BOOST_AUTO_TEST_CASE(ignore_eos_is_resolved_by_the_frontend_so_listed_ids_still_stop) {
  // The frontend leaves EOS out of stop_token_ids under ignore_eos; what is
  // listed (the client's stop_token_ids) still ends the sequence, as in vLLM.
  BOOST_TEST(check_stop(7, 1, 11, stops(4, 0, true), 100) == finish_reason::stop);
  auto no_eos = stops(4, 0, true);
  no_eos.stop_token_ids.clear();
  BOOST_TEST(check_stop(7, 1, 11, no_eos, 100) == finish_reason::none);
  BOOST_TEST(check_stop(7, 4, 14, no_eos, 100) == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(max_tokens_finishes_with_length) {
  BOOST_TEST(check_stop(5, 3, 13, stops(4), 100) == finish_reason::none);
  BOOST_TEST(check_stop(5, 4, 14, stops(4), 100) == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(context_length_finishes_with_length) {
  BOOST_TEST(check_stop(5, 1, 15, stops(40), 16) == finish_reason::none);
  BOOST_TEST(check_stop(5, 2, 16, stops(40), 16) == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(stop_token_wins_over_length) {
  BOOST_TEST(check_stop(7, 4, 16, stops(4), 16) == finish_reason::stop);
}

BOOST_AUTO_TEST_SUITE_END()
