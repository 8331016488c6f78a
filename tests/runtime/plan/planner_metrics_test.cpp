#include "runtime/plan/planner_metrics.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::plan;

namespace {

bool has(const std::string& text, const std::string& line) {
  if (text.find(line + "\n") != std::string::npos)
    return true;
  BOOST_TEST_MESSAGE("missing: " << line << "\nin:\n" << text);
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_metrics_suite)

BOOST_AUTO_TEST_CASE(each_step_sets_the_pool_gauges_and_counts_decisions) {
  metrics::registry reg;
  auto m = planner_metrics::create(reg);
  BOOST_REQUIRE(m);
  step_result r;
  r.decisions.push_back({"decode", config::worker_role::decode, 2, 4, 2, "load"});
  r.decisions.push_back({"prefill", config::worker_role::prefill, 3, 1, 3, "idle"});
  pool_status d;
  d.pool = "decode";
  d.target = 4;
  d.observed = 2;
  d.pending = true;
  d.engines = 2;
  d.mean_load = 0.75;
  d.predicted_load = 0.875;
  d.mean_waiting = 3;
  d.predicted_waiting = 4.5;
  d.throughput_floor = 3;
  d.sla = sla_estimate{1000, 2000, 250, 16, true, true};
  r.pools.push_back(d);
  (*m)->observe(r);
  (*m)->observe(step_result{}); // a quiet step: counts the step, keeps the gauges
  const auto text = reg.render();
  BOOST_TEST(has(text, "dynamo_planner_steps_total 2"));
  BOOST_TEST(has(text, R"(dynamo_planner_decisions_total{pool="decode",direction="up"} 1)"));
  BOOST_TEST(has(text, R"(dynamo_planner_decisions_total{pool="prefill",direction="down"} 1)"));
  BOOST_TEST(has(text, R"(dynamo_planner_target_replicas{pool="decode"} 4)"));
  BOOST_TEST(has(text, R"(dynamo_planner_observed_replicas{pool="decode"} 2)"));
  BOOST_TEST(has(text, R"(dynamo_planner_reporting_engines{pool="decode"} 2)"));
  BOOST_TEST(has(text, R"(dynamo_planner_observed_load{pool="decode"} 0.75)"));
  BOOST_TEST(has(text, R"(dynamo_planner_predicted_load{pool="decode"} 0.875)"));
  BOOST_TEST(has(text, R"(dynamo_planner_observed_waiting{pool="decode"} 3)"));
  BOOST_TEST(has(text, R"(dynamo_planner_predicted_waiting{pool="decode"} 4.5)"));
  BOOST_TEST(has(text, R"(dynamo_planner_pending_decision{pool="decode"} 1)"));
  BOOST_TEST(has(text, R"(dynamo_planner_throughput_floor_replicas{pool="decode"} 3)"));
  BOOST_TEST(has(text, R"(dynamo_planner_sla_prefill_seconds{pool="decode"} 0.25)"));
  BOOST_TEST(has(text, R"(dynamo_planner_sla_decode_batch{pool="decode"} 16)"));
}

BOOST_AUTO_TEST_SUITE_END()
