#include "runtime/metrics/registry.hpp"

#include <boost/test/unit_test.hpp>

#include <limits>
#include <thread>

using namespace dynamo;
using namespace dynamo::metrics;

BOOST_AUTO_TEST_SUITE(registry_suite)

BOOST_AUTO_TEST_CASE(renders_exact_text_for_a_small_registry) {
  registry reg;
  auto requests = reg.add_counter("app_requests_total", "Requests served", {"model", "status"});
  auto inflight = reg.add_gauge("app_inflight", "In flight");
  auto latency = reg.add_histogram("app_latency_seconds", "Latency", {"model"}, {0.1, 1.0});
  BOOST_REQUIRE(requests && inflight && latency);
  (*requests)->with({"m1", "ok"}).inc();
  (*requests)->with({"m1", "ok"}).inc(2);
  (*requests)->with({"a\"b\\c\nd", "error"}).inc();
  (*inflight)->get().set(3);
  (*inflight)->get().dec();
  auto& h = (*latency)->with({"m1"});
  h.observe(0.05);
  h.observe(0.1); // le is inclusive
  h.observe(0.5);
  h.observe(7.0);
  const std::string expected = "# HELP app_requests_total Requests served\n"
                               "# TYPE app_requests_total counter\n"
                               "app_requests_total{model=\"a\\\"b\\\\c\\nd\",status=\"error\"} 1\n"
                               "app_requests_total{model=\"m1\",status=\"ok\"} 3\n"
                               "# HELP app_inflight In flight\n"
                               "# TYPE app_inflight gauge\n"
                               "app_inflight 2\n"
                               "# HELP app_latency_seconds Latency\n"
                               "# TYPE app_latency_seconds histogram\n"
                               "app_latency_seconds_bucket{model=\"m1\",le=\"0.1\"} 2\n"
                               "app_latency_seconds_bucket{model=\"m1\",le=\"1\"} 3\n"
                               "app_latency_seconds_bucket{model=\"m1\",le=\"+Inf\"} 4\n"
                               "app_latency_seconds_sum{model=\"m1\"} 7.65\n"
                               "app_latency_seconds_count{model=\"m1\"} 4\n";
  BOOST_TEST(reg.render() == expected);
}

BOOST_AUTO_TEST_CASE(labelled_family_without_series_renders_its_header) {
  registry reg;
  BOOST_REQUIRE(reg.add_counter("x_total", "X", {"model"}));
  BOOST_REQUIRE(reg.add_counter("y_total", "Y"));
  BOOST_REQUIRE(reg.add_histogram("z_seconds", "Z", {"model"}, {1}));
  BOOST_TEST(reg.render() == "# HELP x_total X\n# TYPE x_total counter\n"
                             "# HELP y_total Y\n# TYPE y_total counter\ny_total 0\n"
                             "# HELP z_seconds Z\n# TYPE z_seconds histogram\n");
}

BOOST_AUTO_TEST_CASE(a_removed_series_no_longer_renders) {
  registry reg;
  auto g = reg.add_gauge("cap_blocks", "Capacity", {"worker_id"});
  BOOST_REQUIRE(g);
  (*g)->with({"a"}).set(8);
  (*g)->with({"b"}).set(16);
  BOOST_TEST((*g)->remove({"a"}));
  BOOST_TEST(!(*g)->remove({"a"})); // gone already
  BOOST_TEST(!(*g)->remove({"c"})); // never there
  BOOST_TEST(reg.render() == "# HELP cap_blocks Capacity\n# TYPE cap_blocks gauge\ncap_blocks{worker_id=\"b\"} 16\n");
  (*g)->with({"a"}).set(4); // back: a fresh series
  BOOST_TEST(reg.render() == "# HELP cap_blocks Capacity\n# TYPE cap_blocks gauge\ncap_blocks{worker_id=\"a\"} 4\n"
                             "cap_blocks{worker_id=\"b\"} 16\n");
}

BOOST_AUTO_TEST_CASE(unlabelled_histogram_renders_le_only) {
  registry reg;
  auto h = reg.add_histogram("h", "H", {}, {1});
  BOOST_REQUIRE(h);
  (*h)->get().observe(2);
  BOOST_TEST(reg.render() == "# HELP h H\n# TYPE h histogram\n"
                             "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n");
}

BOOST_AUTO_TEST_CASE(help_text_escapes_backslash_and_newline) {
  BOOST_TEST(escape_help("a\\b\nc\"d") == "a\\\\b\\nc\"d");
  BOOST_TEST(escape_label_value("a\\b\nc\"d") == "a\\\\b\\nc\\\"d");
}

BOOST_AUTO_TEST_CASE(values_use_shortest_round_trip_and_special_spellings) {
  BOOST_TEST(format_value(3.0) == "3");
  BOOST_TEST(format_value(0.0022) == "0.0022");
  BOOST_TEST(format_value(128000.0) == "128000");
  BOOST_TEST(format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  BOOST_TEST(format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  BOOST_TEST(format_value(std::numeric_limits<double>::quiet_NaN()) == "NaN");
}

BOOST_AUTO_TEST_CASE(rejects_bad_names_duplicates_and_bad_bounds) {
  registry reg;
  BOOST_TEST(!reg.add_counter("1abc", "bad"));
  BOOST_TEST(!reg.add_counter("a-b", "bad"));
  BOOST_TEST(!reg.add_counter("ok_total", "bad label", {"__reserved"}));
  BOOST_TEST(!reg.add_counter("ok_total", "dup label", {"a", "a"}));
  BOOST_TEST(!reg.add_histogram("h1", "le label", {"le"}, {1}));
  BOOST_TEST(!reg.add_histogram("h2", "not increasing", {}, {1, 1}));
  BOOST_TEST(!reg.add_histogram("h3", "not finite", {}, {1, std::numeric_limits<double>::infinity()}));
  BOOST_REQUIRE(reg.add_counter("ok_total", "first"));
  auto dup = reg.add_gauge("ok_total", "second");
  BOOST_REQUIRE(!dup);
  BOOST_TEST(to_string(code_of(dup.error())) == "invalid_argument");
}

BOOST_AUTO_TEST_CASE(counter_ignores_negative_increments) {
  counter c;
  c.inc(2);
  c.inc(-5);
  BOOST_TEST(c.value() == 2.0);
}

BOOST_AUTO_TEST_CASE(wrong_label_count_pads_instead_of_crashing) {
  registry reg;
  auto f = reg.add_counter("c_total", "C", {"a", "b"});
  BOOST_REQUIRE(f);
  (*f)->with({"x"}).inc();
  (*f)->with({"x", "", "extra"}).inc();
  BOOST_TEST(reg.render() == "# HELP c_total C\n# TYPE c_total counter\nc_total{a=\"x\",b=\"\"} 2\n");
}

BOOST_AUTO_TEST_CASE(concurrent_increments_are_not_lost) {
  registry reg;
  auto f = reg.add_counter("n_total", "N", {"t"});
  auto h = reg.add_histogram("d", "D", {}, {0.5});
  BOOST_REQUIRE(f && h);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        (*f)->with({"same"}).inc();
        (*h)->get().observe(1.0);
      }
    });
  for (auto& t : threads)
    t.join();
  BOOST_TEST((*f)->with({"same"}).value() == 40000.0);
  auto snap = (*h)->get().read();
  BOOST_TEST(snap.count == 40000u);
  BOOST_TEST(snap.cumulative[0] == 0u);
  BOOST_TEST(snap.cumulative[1] == 40000u);
}

BOOST_AUTO_TEST_SUITE_END()
