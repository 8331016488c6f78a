#include "runtime/metrics/frontend_metrics.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>

using namespace dynamo;
using namespace dynamo::metrics;
using namespace std::chrono_literals;

namespace {

struct fixture {
  registry reg;
  std::unique_ptr<frontend_metrics> m;
  request_recorder::clock::time_point t0{};
  fixture() {
    auto made = frontend_metrics::create(reg);
    BOOST_REQUIRE(made);
    m = std::move(*made);
  }
  double requests(const std::string& model, const std::string& ep, const std::string& rt,
                  const std::string& status, const std::string& err) {
    return m->requests_total->with({model, ep, rt, status, err}).value();
  }
};

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(frontend_metrics_suite, fixture)

BOOST_AUTO_TEST_CASE(registers_dynamo_names_types_and_buckets) {
  m->disconnected_clients->get().inc(0); // exists without labels
  { request_recorder r{*m, "m", endpoint_label::chat_completions, request_type::stream, t0}; }
  auto text = reg.render();
  for (auto* line : {"# TYPE dynamo_frontend_requests_total counter",
                     "# TYPE dynamo_frontend_inflight_requests gauge",
                     "# TYPE dynamo_frontend_queued_requests gauge",
                     "# TYPE dynamo_frontend_disconnected_clients counter",
                     "# TYPE dynamo_frontend_request_duration_seconds histogram",
                     "# HELP dynamo_frontend_request_duration_seconds Duration of LLM requests"})
    BOOST_TEST(contains(text, line), line);
  BOOST_TEST(contains(text, "dynamo_frontend_request_duration_seconds_bucket{model=\"m\",le=\"510\"}"));
  BOOST_TEST(m->time_to_first_token->bounds().size() == 18u);
  BOOST_TEST(m->inter_token_latency->bounds().back() == 2.0);
  BOOST_TEST(m->cached_tokens->bounds() == m->input_sequence_tokens->bounds());
}

BOOST_AUTO_TEST_CASE(prefix_is_configurable_and_validated) {
  registry other;
  frontend_metrics_config cfg;
  cfg.prefix = "nv_llm_http_service";
  auto ok = frontend_metrics::create(other, cfg);
  BOOST_REQUIRE(ok);
  BOOST_TEST((*ok)->requests_total->name() == "nv_llm_http_service_requests_total");
  registry third;
  cfg.prefix = "bad prefix";
  BOOST_TEST(!frontend_metrics::create(third, cfg));
}

BOOST_AUTO_TEST_CASE(successful_stream_records_ttft_itl_and_tokens) {
  {
    request_recorder r{*m, "m", endpoint_label::chat_completions, request_type::stream, t0};
    BOOST_TEST(m->inflight_requests->with({"m"}).value() == 1.0);
    BOOST_TEST(m->queued_requests->with({"m"}).value() == 1.0);
    r.observe_prompt(60);
    r.observe_prompt(999); // only once
    r.observe_cached(16);
    r.observe_tokens(0, t0 + 1ms); // empty chunk: nothing
    r.observe_tokens(1, t0 + 20ms); // TTFT 0.02 s
    BOOST_TEST(m->queued_requests->with({"m"}).value() == 0.0);
    r.observe_tokens(4, t0 + 60ms); // 40 ms gap over 4 tokens -> 4 x 0.01 s
    r.mark_ok();
    r.finish(t0 + 3s);
  }
  BOOST_TEST(m->inflight_requests->with({"m"}).value() == 0.0);
  BOOST_TEST(requests("m", "chat_completions", "stream", "success", "") == 1.0);
  BOOST_TEST(m->output_tokens_total->with({"m"}).value() == 5.0);

  auto ttft = m->time_to_first_token->with({"m"}).read();
  BOOST_TEST(ttft.count == 1u);
  BOOST_TEST(ttft.sum == 0.02, boost::test_tools::tolerance(1e-12));
  auto itl = m->inter_token_latency->with({"m"}).read();
  BOOST_TEST(itl.count == 4u);
  BOOST_TEST(itl.sum == 0.04, boost::test_tools::tolerance(1e-12));
  // Bounds 0, 0.0019, 0.0035, 0.0067, 0.013: 0.01 s lands in le=0.013 (index 4).
  BOOST_TEST(itl.cumulative[3] == 0u);
  BOOST_TEST(itl.cumulative[4] == 4u);
  auto isl = m->input_sequence_tokens->with({"m"}).read();
  BOOST_TEST(isl.count == 1u);
  BOOST_TEST(isl.sum == 60.0);
  BOOST_TEST(m->cached_tokens->with({"m"}).read().sum == 16.0);
  auto osl = m->output_sequence_tokens->with({"m"}).read();
  BOOST_TEST(osl.count == 1u);
  BOOST_TEST(osl.sum == 5.0);
  auto dur = m->request_duration->with({"m"}).read();
  BOOST_TEST(dur.sum == 3.0);
}

BOOST_AUTO_TEST_CASE(unmarked_request_counts_as_internal_error_without_output_length) {
  { request_recorder r{*m, "m", endpoint_label::completions, request_type::unary, t0}; }
  BOOST_TEST(requests("m", "completions", "unary", "error", "internal") == 1.0);
  BOOST_TEST(m->queued_requests->with({"m"}).value() == 0.0);
  BOOST_TEST(m->output_sequence_tokens->with({"m"}).read().count == 0u);
}

BOOST_AUTO_TEST_CASE(disconnect_counts_client_and_cancelled_error) {
  {
    request_recorder r{*m, "m", endpoint_label::completions, request_type::stream, t0};
    r.mark_disconnected();
    r.finish(t0 + 1s);
    r.finish(t0 + 2s); // idempotent
  }
  BOOST_TEST(m->disconnected_clients->get().value() == 1.0);
  BOOST_TEST(requests("m", "completions", "stream", "error", "cancelled") == 1.0);
  BOOST_TEST(m->request_duration->with({"m"}).read().count == 1u);
}

BOOST_AUTO_TEST_CASE(error_codes_map_to_dynamo_error_types) {
  BOOST_TEST(to_string(error_type_of(errc::invalid_argument)) == "validation");
  BOOST_TEST(to_string(error_type_of(errc::not_found)) == "not_found");
  BOOST_TEST(to_string(error_type_of(errc::overloaded)) == "overload");
  BOOST_TEST(to_string(error_type_of(errc::no_workers)) == "overload");
  BOOST_TEST(to_string(error_type_of(errc::cancelled)) == "cancelled");
  BOOST_TEST(to_string(error_type_of(errc::timeout)) == "response_timeout");
  BOOST_TEST(to_string(error_type_of(errc::unsupported)) == "not_implemented");
  BOOST_TEST(to_string(error_type_of(errc::internal)) == "internal");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(frontend_metrics_models, fixture)

BOOST_AUTO_TEST_CASE(a_served_model_has_its_success_series_at_zero_before_any_request) {
  m->register_model("m");
  const auto text = reg.render();
  for (auto* line :
       {R"(dynamo_frontend_requests_total{model="m",endpoint="chat_completions",request_type="unary",status="success",error_type=""} 0)",
        R"(dynamo_frontend_requests_total{model="m",endpoint="chat_completions",request_type="stream",status="success",error_type=""} 0)",
        R"(dynamo_frontend_requests_total{model="m",endpoint="completions",request_type="stream",status="success",error_type=""} 0)",
        R"(dynamo_frontend_requests_total{model="m",endpoint="embeddings",request_type="unary",status="success",error_type=""} 0)",
        R"(dynamo_frontend_inflight_requests{model="m"} 0)", R"(dynamo_frontend_output_tokens_total{model="m"} 0)"})
    BOOST_TEST(contains(text, std::string{line} + "\n"), line);
  // Registering again (a model re-added) keeps what was counted.
  m->count_request("m", endpoint_label::completions, request_type::unary, error_type::none);
  m->register_model("m");
  BOOST_TEST(requests("m", "completions", "unary", "success", "") == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(frontend_metrics_env)

namespace {

/// A lookup over fixed variables (what std::getenv would return).
auto env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

} // namespace

BOOST_AUTO_TEST_CASE(unset_variables_keep_dynamos_defaults) {
  auto cfg = frontend_metrics_config_from_env(env_of({{"DYN_METRICS_TTFT_MIN", ""}}));
  BOOST_REQUIRE(cfg);
  const frontend_metrics_config def;
  BOOST_TEST(cfg->prefix == "dynamo_frontend");
  BOOST_TEST(cfg->request_duration.bounds() == def.request_duration.bounds());
  BOOST_TEST(cfg->time_to_first_token.bounds() == def.time_to_first_token.bounds());
}

BOOST_AUTO_TEST_CASE(variables_set_the_prefix_and_the_bucket_ranges) {
  auto cfg = frontend_metrics_config_from_env(env_of({{"DYN_METRICS_PREFIX", "edge"},
                                                      {"DYN_METRICS_REQUEST_DURATION_MIN", "0.01"},
                                                      {"DYN_METRICS_REQUEST_DURATION_MAX", "100"},
                                                      {"DYN_METRICS_REQUEST_DURATION_COUNT", "5"},
                                                      {"DYN_METRICS_ITL_MAX", "4"}}));
  BOOST_REQUIRE(cfg);
  BOOST_TEST(cfg->prefix == "edge");
  BOOST_TEST(cfg->request_duration.bounds() == (std::vector<double>{0, 0.1, 1, 10, 100}),
             boost::test_tools::per_element());
  BOOST_TEST(cfg->inter_token_latency.max == 4.0);
  BOOST_TEST(cfg->inter_token_latency.min == 0.001);
  registry reg;
  auto m = frontend_metrics::create(reg, *cfg);
  BOOST_REQUIRE(m);
  BOOST_TEST(reg.render().find("# TYPE edge_request_duration_seconds histogram") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_values_name_their_variable) {
  auto why = [](std::map<std::string, std::string> vars) {
    auto cfg = frontend_metrics_config_from_env(env_of(std::move(vars)));
    return cfg ? std::string{"accepted"} : message_of(cfg.error());
  };
  BOOST_TEST(why({{"DYN_METRICS_TTFT_MIN", "fast"}}).find("DYN_METRICS_TTFT_MIN='fast'") != std::string::npos);
  BOOST_TEST(why({{"DYN_METRICS_TTFT_MIN", "1000"}}).find("DYN_METRICS_TTFT_MIN/_MAX") != std::string::npos);
  BOOST_TEST(why({{"DYN_METRICS_ITL_MIN", "0"}}).find("DYN_METRICS_ITL_MIN/_MAX") != std::string::npos);
  BOOST_TEST(why({{"DYN_METRICS_ITL_COUNT", "2.5"}}).find("DYN_METRICS_ITL_COUNT") != std::string::npos);
  BOOST_TEST(why({{"DYN_METRICS_ITL_COUNT", "100"}}).find("DYN_METRICS_ITL_COUNT") != std::string::npos);
  BOOST_TEST(why({{"DYN_METRICS_PREFIX", "my-app"}}).find("DYN_METRICS_PREFIX") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
