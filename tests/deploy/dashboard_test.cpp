// deploy/observability/grafana-dashboard.json against the families the
// processes register: every metric a panel's PromQL names must be exported by
// the frontend (dynamo_frontend_*), a router (dynamo_router_*), a worker's
// system server (dynamo_component_*, kvbm_*) or the planner (dynamo_planner_*); and
// every group has at least one panel.
#define BOOST_TEST_MODULE deploy_dashboard
#include "runtime/metrics/component_metrics.hpp"
#include "runtime/metrics/frontend_metrics.hpp"
#include "runtime/plan/planner_metrics.hpp"
#include "runtime/route/router_metrics.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

using namespace dynamo;

namespace {

/// Sample names of every family the system registers.
std::set<std::string> exported() {
  auto reg = std::make_shared<metrics::registry>();
  BOOST_REQUIRE(metrics::frontend_metrics::create(*reg));
  BOOST_REQUIRE(metrics::component_metrics::create(*reg));
  BOOST_REQUIRE(plan::planner_metrics::create(*reg));
  BOOST_REQUIRE(route::router_metrics::create(reg));
  auto names = reg->sample_names();
  return {names.begin(), names.end()};
}

/// Every PromQL expression in the dashboard's panels.
std::vector<std::string> expressions() {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src != nullptr, "DYNAMO_SOURCE_DIR is not set (run through ctest)");
  std::ifstream in(std::string{src} + "/deploy/observability/grafana-dashboard.json");
  BOOST_REQUIRE(in);
  const auto dash = nlohmann::json::parse(in);
  std::vector<std::string> out;
  for (const auto& p : dash.at("panels"))
    if (p.contains("targets"))
      for (const auto& t : p.at("targets"))
        out.push_back(t.at("expr").get<std::string>());
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_queried_metric_is_exported) {
  const auto names = exported();
  const std::regex metric(R"((dynamo|kvbm)_[a-zA-Z0-9_]+)");
  std::set<std::string> prefixes;
  const auto exprs = expressions();
  BOOST_REQUIRE(!exprs.empty());
  // Label names (grouping clauses, selectors) are not metric names.
  const std::regex labels(R"(\b(by|without)\s*\([^)]*\)|\{[^}]*\})");
  for (const auto& expr : exprs) {
    const std::string e = std::regex_replace(expr, labels, " ");
    size_t found = 0;
    for (auto it = std::sregex_iterator(e.begin(), e.end(), metric); it != std::sregex_iterator(); ++it) {
      const std::string name = it->str();
      BOOST_TEST(names.count(name) == 1u, "the dashboard queries " << name << ", which nothing exports: " << expr);
      prefixes.insert(name.substr(0, name.find('_', name.find('_') + 1)));
      ++found;
    }
    BOOST_TEST(found > 0u, "a panel queries no dynamo metric: " << expr);
  }
  for (const char* group : {"dynamo_frontend", "dynamo_router", "dynamo_component", "dynamo_planner", "kvbm_offload"})
    BOOST_TEST(prefixes.count(group) == 1u, "no panel shows " << group);
}
