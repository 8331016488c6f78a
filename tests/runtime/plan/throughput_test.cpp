#include "runtime/metrics/frontend_metrics.hpp"
#include "runtime/plan/throughput.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::plan;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(throughput_suite)

BOOST_AUTO_TEST_CASE(parses_prometheus_text_per_model) {
  auto m = parse_frontend_metrics(R"(# HELP dynamo_frontend_requests_total Total number of LLM requests processed
# TYPE dynamo_frontend_requests_total counter
dynamo_frontend_requests_total{model="a",endpoint="completions",request_type="unary",status="success",error_type=""} 3
dynamo_frontend_requests_total{model="a",endpoint="chat_completions",request_type="stream",status="error",error_type="internal"} 1
dynamo_frontend_requests_total{model="b \"quoted\"",status="success"} 7 1700000000000
dynamo_frontend_input_sequence_tokens_bucket{model="a",le="+Inf"} 4
dynamo_frontend_input_sequence_tokens_sum{model="a"} 400.5
dynamo_frontend_input_sequence_tokens_count{model="a"} 4
dynamo_frontend_output_sequence_tokens_sum{model="a"} 80
dynamo_frontend_output_sequence_tokens_count{model="a"} 4
dynamo_frontend_cached_tokens_sum{model="a"} 100
other_metric 5
dynamo_frontend_inflight_requests NaN
)");
  if (!m)
    BOOST_FAIL(describe(m.error()));
  BOOST_REQUIRE_EQUAL(m->size(), 2u);
  const auto& a = m->at("a");
  BOOST_TEST(a.requests == 4.0);
  BOOST_TEST(a.isl_sum == 400.5);
  BOOST_TEST(a.isl_count == 4.0);
  BOOST_TEST(a.osl_sum == 80.0);
  BOOST_TEST(a.osl_count == 4.0);
  BOOST_TEST(a.cached_sum == 100.0);
  BOOST_TEST(m->at("b \"quoted\"").requests == 7.0);
}

BOOST_AUTO_TEST_CASE(reads_what_the_frontend_renders) {
  // The exposition of runtime/metrics itself, so a renamed family fails here.
  metrics::registry reg;
  auto fm = metrics::frontend_metrics::create(reg);
  BOOST_REQUIRE(fm);
  auto t0 = metrics::request_recorder::clock::time_point{};
  for (uint32_t i = 0; i < 2; ++i) {
    metrics::request_recorder r(**fm, "smol", metrics::endpoint_label::chat_completions,
                                metrics::request_type::stream, t0);
    r.observe_prompt(100 + i * 100);
    r.observe_cached(50);
    r.observe_tokens(10, t0 + std::chrono::milliseconds(5));
    r.mark_ok();
    r.finish(t0 + std::chrono::milliseconds(10));
  }
  auto m = parse_frontend_metrics(reg.render());
  if (!m)
    BOOST_FAIL(describe(m.error()));
  const auto& s = m->at("smol");
  BOOST_TEST(s.requests == 2.0);
  BOOST_TEST(s.isl_sum == 300.0);
  BOOST_TEST(s.isl_count == 2.0);
  BOOST_TEST(s.osl_sum == 20.0);
  BOOST_TEST(s.osl_count == 2.0);
  BOOST_TEST(s.cached_sum == 100.0);
}

BOOST_AUTO_TEST_CASE(malformed_lines_are_errors) {
  for (const char* text : {"dynamo_frontend_requests_total{model=\"a\"}\n",
                           "dynamo_frontend_requests_total{model=a} 1\n",
                           "dynamo_frontend_requests_total{model=\"a\" 1\n",
                           "dynamo_frontend_requests_total 1x\n", "{model=\"a\"} 1\n"}) {
    auto m = parse_frontend_metrics(text);
    BOOST_TEST(!m, text);
    if (!m)
      BOOST_TEST(to_string(code_of(m.error())) == "malformed_message");
  }
  auto m = parse_frontend_metrics("a 1\nb{x=\"1\"} oops\n");
  BOOST_REQUIRE(!m);
  BOOST_TEST(message_of(m.error()) == "metrics line 2: bad value 'oops'");
}

BOOST_AUTO_TEST_CASE(traffic_between_two_scrapes) {
  traffic_counters a{10, 1000, 10, 200, 10, 0};
  traffic_counters b{30, 5000, 40, 1200, 30, 1000}; // 30 prompts came in, 20 requests ended
  auto t = traffic_between(a, b, 10.0);
  BOOST_REQUIRE(t);
  BOOST_TEST(t->request_rate == 3.0); // arrivals, not completions
  BOOST_TEST(t->isl == 4000.0 / 30.0);
  BOOST_TEST(t->osl == 50.0);
  BOOST_TEST(t->kv_hit_rate == 0.25);
  // A frontend without the prompt histogram: completions are all there is.
  auto old = traffic_between({10, 0, 0, 0, 0, 0}, {30, 0, 0, 0, 0, 0}, 10.0);
  BOOST_REQUIRE(old);
  BOOST_TEST(old->request_rate == 2.0);
  BOOST_TEST(!traffic_between(b, a, 10.0)); // counters went back: frontend restarted
  BOOST_TEST(!traffic_between(a, b, 0.0));
  auto idle = traffic_between(a, a, 5.0);
  BOOST_REQUIRE(idle);
  BOOST_TEST(idle->request_rate == 0.0);
  BOOST_TEST(idle->isl == 0.0);
}

BOOST_AUTO_TEST_CASE(replicas_needed_by_role) {
  traffic t{2.0, 1000, 100, 0.5};
  replica_capacity cap{500, 150};
  using config::worker_role;
  BOOST_TEST(*replicas_needed(worker_role::prefill, t, cap) == 2u);   // 2*1000*0.5/500 = 2 exactly
  BOOST_TEST(*replicas_needed(worker_role::decode, t, cap) == 2u);    // 2*100/150 = 1.33
  BOOST_TEST(*replicas_needed(worker_role::aggregated, t, cap) == 4u); // 2*(1 + 0.667) = 3.33
  BOOST_TEST(*replicas_needed(worker_role::decode, traffic{}, cap) == 0u);
  BOOST_TEST(!replicas_needed(worker_role::prefill, t, {0, 150}).has_value());
  BOOST_TEST(!replicas_needed(worker_role::aggregated, t, {500, 0}).has_value());
  // (0.1 + 0.2) * 10 is 3.0000000000000004 in doubles: still 3 replicas.
  BOOST_TEST(*replicas_needed(worker_role::decode, traffic{0.1 + 0.2, 0, 10, 0}, {0, 1}) == 3u);
}

BOOST_AUTO_TEST_CASE(prometheus_sums_read_as_one_frontend) {
  // What Prometheus answers to prometheus_traffic_query() for two models.
  const std::string answer = R"({"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"__name__":"dynamo_frontend_requests_total","model":"m"},"value":[1795840000.1,"30"]},
    {"metric":{"__name__":"dynamo_frontend_input_sequence_tokens_count","model":"m"},"value":[1795840000.1,"40"]},
    {"metric":{"__name__":"dynamo_frontend_input_sequence_tokens_sum","model":"m"},"value":[1795840000.1,"5000"]},
    {"metric":{"__name__":"dynamo_frontend_cached_tokens_sum","model":"m"},"value":[1795840000.1,"1e3"]},
    {"metric":{"__name__":"dynamo_frontend_requests_total","model":"other"},"value":[1795840000.1,"7"]}]}})";
  auto text = prometheus_vector_to_text(answer);
  BOOST_REQUIRE_MESSAGE(text, (text ? "" : message_of(text.error())));
  auto counters = parse_frontend_metrics(*text);
  BOOST_REQUIRE(counters);
  BOOST_REQUIRE_EQUAL(counters->size(), 2u);
  const traffic_counters& m = counters->at("m");
  BOOST_TEST(m.requests == 30.0);
  BOOST_TEST(m.isl_count == 40.0);
  BOOST_TEST(m.isl_sum == 5000.0);
  BOOST_TEST(m.cached_sum == 1000.0);
  BOOST_TEST(counters->at("other").requests == 7.0);
  // Not a successful vector: an error naming why, never zeros.
  BOOST_TEST(!prometheus_vector_to_text(R"({"status":"error","error":"parse error"})"));
  BOOST_TEST(!prometheus_vector_to_text(R"({"status":"success","data":{"resultType":"matrix","result":[]}})"));
  BOOST_TEST(!prometheus_vector_to_text("<html>"));
  BOOST_TEST(!prometheus_vector_to_text(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}, "value":[1,"2"]}]}})"));
  // An empty vector (no traffic yet) is no samples.
  auto none = prometheus_vector_to_text(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  BOOST_REQUIRE(none);
  BOOST_TEST(none->empty());
}

BOOST_AUTO_TEST_CASE(the_prometheus_query_is_url_encoded) {
  const std::string q = prometheus_traffic_query();
  BOOST_TEST(q.starts_with("sum by (__name__, model) ({__name__=~\"dynamo_frontend_(requests_total|"));
  const std::string t = prometheus_query_target("/prom/", "a b{c=\"d\"}");
  BOOST_TEST(t == "/prom/api/v1/query?query=a%20b%7Bc%3D%22d%22%7D");
  BOOST_TEST(prometheus_query_target("", "x").starts_with("/api/v1/query?query=x"));
}

BOOST_AUTO_TEST_CASE(http_urls) {
  auto u = parse_metrics_url("http://127.0.0.1:9000/metrics");
  BOOST_REQUIRE(u);
  BOOST_TEST(u->host == "127.0.0.1");
  BOOST_TEST(u->port == 9000);
  BOOST_TEST(u->target == "/metrics");
  auto d = parse_metrics_url("http://frontend");
  BOOST_REQUIRE(d);
  BOOST_TEST(d->port == 80);
  BOOST_TEST(d->target == "/metrics");
  auto s = parse_metrics_url("https://frontend");
  BOOST_REQUIRE(s);
  BOOST_TEST(s->tls);
  BOOST_TEST(s->port == 443);
  BOOST_TEST(s->target == "/metrics");
  BOOST_TEST(!parse_metrics_url("ftp://x/metrics"));
  BOOST_TEST(!parse_metrics_url("http://:80/"));
  BOOST_TEST(!parse_metrics_url("http://x:0/"));
  BOOST_TEST(!parse_metrics_url("http://x:99999/"));
}

BOOST_AUTO_TEST_SUITE_END()
