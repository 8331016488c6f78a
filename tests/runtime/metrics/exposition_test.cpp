#include "runtime/metrics/exposition.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace dynamo;
using namespace dynamo::metrics;

BOOST_AUTO_TEST_SUITE(exposition)

BOOST_AUTO_TEST_CASE(samples_with_labels_escapes_and_timestamps) {
  auto s = parse_exposition("# HELP x_total X\n# TYPE x_total counter\n"
                            "x_total{model=\"a\\\"b\",kind=\"k\\nl\"} 3 1700000000000\r\n"
                            "\n"
                            "y 2.5\n"
                            "z{} +Inf\n"
                            "w{le=\"0.5\",} NaN");
  BOOST_REQUIRE(static_cast<bool>(s));
  BOOST_REQUIRE(s->size() == 4u);
  BOOST_TEST((*s)[0].name == "x_total");
  BOOST_TEST((*s)[0].label("model") == "a\"b");
  BOOST_TEST((*s)[0].label("kind") == "k\nl");
  BOOST_TEST((*s)[0].label("absent") == "");
  BOOST_TEST((*s)[0].value == 3.0);
  BOOST_TEST((*s)[1].name == "y");
  BOOST_TEST((*s)[1].labels.empty());
  BOOST_TEST((*s)[1].value == 2.5);
  BOOST_TEST(std::isinf((*s)[2].value));
  BOOST_TEST((*s)[3].label("le") == "0.5");
  BOOST_TEST(std::isnan((*s)[3].value));
}

BOOST_AUTO_TEST_CASE(sums_by_name_and_labels_skipping_non_finite) {
  auto s = parse_exposition("m{p=\"remote\",model=\"a\"} 2\n"
                            "m{p=\"local\",model=\"a\"} 5\n"
                            "m{p=\"remote\",model=\"b\"} 3\n"
                            "m_other{p=\"remote\"} 100\n"
                            "m_total 1000\n" // another metric whose name starts with this one
                            "m{p=\"remote\"} +Inf\n");
  BOOST_REQUIRE(static_cast<bool>(s));
  BOOST_TEST(*sum_samples(*s, "m") == 10.0);
  BOOST_TEST(*sum_samples(*s, "m", {{"p", "remote"}}) == 5.0);
  BOOST_TEST(*sum_samples(*s, "m", {{"p", "remote"}, {"model", "b"}}) == 3.0);
  BOOST_TEST(!sum_samples(*s, "m", {{"p", "none"}}).has_value());
  BOOST_TEST(!sum_samples(*s, "absent").has_value());
}

BOOST_AUTO_TEST_CASE(malformed_lines_name_their_line) {
  for (const char* bad : {"ok 1\n{x=\"1\"} 2", "ok 1\nm{x=1} 2", "ok 1\nm{x=\"1\" 2", "ok 1\nm 1x",
                          "ok 1\nm", "ok 1\nm{x=\"1\\"}) {
    auto s = parse_exposition(bad);
    BOOST_REQUIRE(!s);
    BOOST_TEST(message_of(s.error()).starts_with("metrics line 2: "), bad);
  }
}

BOOST_AUTO_TEST_SUITE_END()
