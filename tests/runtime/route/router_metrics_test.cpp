// router_metrics: a router's index totals on /metrics, counters advancing by
// what is new, and a restarted router (new index, new cursor) continuing the series.
#include "runtime/route/router_metrics.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace dynamo;
using namespace dynamo::route;
using namespace dynamo::route::test;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(router_metrics_export)

BOOST_AUTO_TEST_CASE(index_totals_appear_and_survive_a_router_restart) {
  auto reg = std::make_shared<metrics::registry>();
  auto m = router_metrics::create(reg);
  BOOST_REQUIRE(m);
  {
    kv_indexer idx(kv_indexer_options{.event_threads = 2});
    router_metrics::cursor cur;
    idx.on_event(store(1, {}, {1, 2}, 0, 0));
    idx.on_event(store(2, {}, {1}, 0, 0));
    idx.on_event(store(1, {9}, {3}, 0, 1)); // parent unknown
    idx.flush();
    (*m)->publish("router[m]", idx, 0, cur);
    (*m)->publish("router[m]", idx, 3, cur); // nothing new but 3 drops
    std::string text = reg->render();
    BOOST_TEST(has_line(text, R"(dynamo_router_kv_events_applied_total{router="router[m]",event_type="stored",status="ok"} 2)"));
    BOOST_TEST(has_line(text, R"(dynamo_router_kv_events_applied_total{router="router[m]",event_type="stored",status="parent_block_not_found"} 1)"));
    BOOST_TEST(has_line(text, R"(dynamo_router_kv_index_entries{router="router[m]"} 3)"));
    BOOST_TEST(has_line(text, R"(dynamo_router_kv_index_workers{router="router[m]"} 2)"));
    BOOST_TEST(has_line(text, R"(dynamo_router_kv_events_dropped_total{router="router[m]"} 3)"));
  }
  // The router restarts: a new index and cursor; its counters keep counting up.
  kv_indexer idx(kv_indexer_options{.event_threads = 1});
  router_metrics::cursor cur;
  idx.on_event(store(3, {}, {5}, 0, 0));
  (*m)->publish("router[m]", idx, 0, cur);
  std::string text = reg->render();
  BOOST_TEST(has_line(text, R"(dynamo_router_kv_events_applied_total{router="router[m]",event_type="stored",status="ok"} 3)"));
  BOOST_TEST(has_line(text, R"(dynamo_router_kv_index_entries{router="router[m]"} 1)"));
  BOOST_TEST(has_line(text, R"(dynamo_router_kv_events_dropped_total{router="router[m]"} 3)"));
}

BOOST_AUTO_TEST_CASE(a_second_set_on_the_same_registry_is_refused) {
  auto reg = std::make_shared<metrics::registry>();
  BOOST_REQUIRE(router_metrics::create(reg));
  BOOST_TEST(!router_metrics::create(reg));
  BOOST_TEST(!router_metrics::create(nullptr));
}

BOOST_AUTO_TEST_SUITE_END()
