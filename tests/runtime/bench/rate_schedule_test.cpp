#include "runtime/bench/rate_schedule.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::bench;

BOOST_AUTO_TEST_SUITE(rate_schedule_suite)

BOOST_AUTO_TEST_CASE(rates_are_linear_between_points) {
  auto s = rate_schedule::parse("0:2,10:12,20:12,30:0");
  BOOST_REQUIRE(s);
  BOOST_TEST(s->end() == 30.0);
  BOOST_TEST(s->rate_at(0) == 2.0);
  BOOST_TEST(s->rate_at(5) == 7.0);
  BOOST_TEST(s->rate_at(15) == 12.0);
  BOOST_TEST(s->rate_at(27.5) == 3.0);
  BOOST_TEST(s->rate_at(30) == 0.0);
  BOOST_TEST(s->rate_at(31) == 0.0);
  BOOST_TEST(s->rate_at(-1) == 0.0);
  BOOST_TEST(s->expected_requests() == 70.0 + 120.0 + 60.0);
}

BOOST_AUTO_TEST_CASE(bad_schedules_name_the_point) {
  auto why = [](std::string_view text) {
    auto s = rate_schedule::parse(text);
    return s ? std::string{"accepted"} : message_of(s.error());
  };
  BOOST_TEST(why("1:2,5:3").find("'1:2'") != std::string::npos);     // must start at 0
  BOOST_TEST(why("0:2,5:3,5:4").find("'5:4'") != std::string::npos); // times increase
  BOOST_TEST(why("0:2,5:-1").find("'5:-1'") != std::string::npos);
  BOOST_TEST(why("0:2,x:1").find("'x:1'") != std::string::npos);
  BOOST_TEST(why("0:2,7").find("'7'") != std::string::npos);
  BOOST_TEST(why("0:2").find("two points") != std::string::npos);
  BOOST_TEST(why("0:0,9:0").find("every rate is 0") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(arrivals_follow_the_rate) {
  // A ramp 0 -> 20/s over 100 s: 1000 expected, a quarter of them in the first half.
  auto s = rate_schedule::parse("0:0,100:20");
  BOOST_REQUIRE(s);
  std::mt19937_64 rng(3);
  uint32_t first = 0, second = 0;
  double t = 0, last = -1;
  while (auto next = s->next_arrival(t, rng)) {
    BOOST_REQUIRE(*next > last);
    BOOST_REQUIRE(*next <= 100.0);
    (*next < 50 ? first : second) += 1;
    last = t = *next;
  }
  // Poisson counts: 250 and 750 expected, 4 standard deviations of slack.
  BOOST_TEST(first > 250 - 64);
  BOOST_TEST(first < 250 + 64);
  BOOST_TEST(second > 750 - 110);
  BOOST_TEST(second < 750 + 110);
}

BOOST_AUTO_TEST_SUITE_END()
