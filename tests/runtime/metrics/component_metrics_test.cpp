#include "runtime/metrics/component_metrics.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

using namespace dynamo;
using namespace dynamo::metrics;

namespace {

const endpoint_labels ep{"dynamo", "backend", "generate"};
const std::string labels = R"(dynamo_namespace="dynamo",dynamo_component="backend",dynamo_endpoint="generate")";

bool has(const std::string& text, const std::string& line) {
  if (text.find(line + "\n") != std::string::npos)
    return true;
  BOOST_TEST_MESSAGE("missing: " << line);
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(component_metrics_suite)

BOOST_AUTO_TEST_CASE(requests_are_counted_with_dynamos_names_and_labels) {
  registry reg;
  auto m = component_metrics::create(reg);
  BOOST_REQUIRE(m);
  auto& c = **m;
  c.on_request(ep, 100);
  c.on_first_response(ep, std::chrono::milliseconds(20));
  c.on_response_bytes(ep, 30);
  c.on_response_bytes(ep, 12);
  c.on_end(ep, std::chrono::milliseconds(50));
  c.on_request(ep, 10); // still in flight
  c.on_request(ep, 1);
  c.on_error(ep, component_error::deserialization);
  c.on_end(ep, std::chrono::seconds(0));
  c.on_cancel(ep);
  const auto text = reg.render();
  BOOST_TEST(has(text, "dynamo_component_requests_total{" + labels + "} 3"));
  BOOST_TEST(has(text, "dynamo_component_request_bytes_total{" + labels + "} 111"));
  BOOST_TEST(has(text, "dynamo_component_response_bytes_total{" + labels + "} 42"));
  BOOST_TEST(has(text, "dynamo_component_inflight_requests{" + labels + "} 1"));
  BOOST_TEST(has(text, "dynamo_component_request_duration_seconds_count{" + labels + "} 2"));
  BOOST_TEST(has(text, "dynamo_component_time_to_first_response_seconds_count{" + labels + "} 1"));
  BOOST_TEST(has(text, "dynamo_component_errors_total{" + labels + R"(,error_type="deserialization"} 1)"));
  BOOST_TEST(has(text, "dynamo_component_cancellation_total{" + labels + "} 1"));
  BOOST_TEST(has(text, "# TYPE dynamo_component_uptime_seconds gauge"));
}

BOOST_AUTO_TEST_CASE(kvstats_follow_load_reports_and_prefix_hits) {
  registry reg;
  auto m = component_metrics::create(reg);
  BOOST_REQUIRE(m);
  protocol::load_metrics load;
  load.worker_id = 0xab;
  load.active_decode_blocks = 12;
  load.total_blocks = 48;
  load.kv_usage = 0.25f;
  load.num_running = 3;
  load.num_waiting = 2;
  (*m)->on_load(ep, load);
  (*m)->on_prefix_lookup(ep, 0xab, 100, 0);
  (*m)->on_prefix_lookup(ep, 0xab, 100, 50); // 50 of 200 prompt tokens
  const auto text = reg.render();
  const std::string w = labels + R"(,worker_id="00000000000000ab"})";
  BOOST_TEST(has(text, "dynamo_component_kvstats_active_blocks{" + w + " 12"));
  BOOST_TEST(has(text, "dynamo_component_kvstats_total_blocks{" + w + " 48"));
  BOOST_TEST(has(text, "dynamo_component_kvstats_gpu_cache_usage_percent{" + w + " 0.25"));
  BOOST_TEST(has(text, "dynamo_component_kvstats_gpu_prefix_cache_hit_rate{" + w + " 0.25"));
  BOOST_TEST(has(text, "dynamo_component_engine_requests_running{" + w + " 3"));
  BOOST_TEST(has(text, "dynamo_component_engine_requests_waiting{" + w + " 2"));
}

BOOST_AUTO_TEST_CASE(kvbm_counters_advance_by_each_reports_news) {
  registry reg;
  auto m = component_metrics::create(reg);
  BOOST_REQUIRE(m);
  protocol::load_metrics load;
  load.worker_id = 0xab;
  load.kvbm = protocol::kvbm_metrics{};
  load.kvbm->kvbm_offload_blocks_d2h = 10;
  load.kvbm->kvbm_onboard_blocks_h2d = 4;
  load.kvbm->kvbm_host_cache_hit_rate = 0.5;
  (*m)->on_load(ep, load);
  load.kvbm->kvbm_offload_blocks_d2h = 15; // +5
  (*m)->on_load(ep, load);
  load.kvbm->kvbm_offload_blocks_d2h = 3; // the engine restarted: +3
  (*m)->on_load(ep, load);
  const auto text = reg.render();
  const std::string w = labels + R"(,worker_id="00000000000000ab"})";
  BOOST_TEST(has(text, "kvbm_offload_blocks_d2h{" + w + " 18"));
  BOOST_TEST(has(text, "kvbm_onboard_blocks_h2d{" + w + " 4"));
  BOOST_TEST(has(text, "kvbm_host_cache_hit_rate{" + w + " 0.5"));
  BOOST_TEST(has(text, "kvbm_onboard_blocks_d2d{" + w + " 0"));
}

BOOST_AUTO_TEST_CASE(engine_steps_are_histograms_per_worker) {
  registry reg;
  auto m = component_metrics::create(reg);
  BOOST_REQUIRE(m);
  const auto steps = (*m)->steps_of(ep, 0xab);
  steps(std::chrono::milliseconds(500), 128);
  (*m)->steps_of(ep, 0xab)(std::chrono::milliseconds(250), 4); // the same series
  const auto text = reg.render();
  const std::string w = labels + R"(,worker_id="00000000000000ab")";
  BOOST_TEST(has(text, "dynamo_component_engine_step_seconds_count{" + w + "} 2"));
  BOOST_TEST(has(text, "dynamo_component_engine_step_seconds_sum{" + w + "} 0.75"));
  BOOST_TEST(has(text, "dynamo_component_engine_step_tokens_count{" + w + "} 2"));
  BOOST_TEST(has(text, "dynamo_component_engine_step_tokens_sum{" + w + "} 132"));
  BOOST_TEST(has(text, "dynamo_component_engine_step_tokens_bucket{" + w + R"(,le="4"} 1)"));
}

BOOST_AUTO_TEST_CASE(uptime_grows) {
  registry reg;
  auto m = component_metrics::create(reg);
  BOOST_REQUIRE(m);
  BOOST_TEST(has(reg.render(), "dynamo_component_uptime_seconds 0"));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  (*m)->refresh_uptime();
  BOOST_TEST(!has(reg.render(), "dynamo_component_uptime_seconds 0"));
}

BOOST_AUTO_TEST_SUITE_END()
