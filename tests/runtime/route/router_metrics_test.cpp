// router_metrics: a router's index totals on /metrics, counters advancing by
// what is new, and a restarted router (new index, new cursor) continuing the series.
#include "runtime/route/router_metrics.hpp"
#include "runtime/route/kv_router.hpp"

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

BOOST_AUTO_TEST_CASE(learned_capacities_appear_per_worker_and_go_with_the_worker) {
  auto reg = std::make_shared<metrics::registry>();
  auto m = router_metrics::create(reg);
  BOOST_REQUIRE(m);
  kv_router_config on;
  on.router_kv_capacity = true;
  kv_router router(on, 4, router_mode::kv, 1);
  kv_router off(kv_router_config{}, 4, router_mode::kv, 1);
  (*m)->publish_capacities("router[off]", off, {7});
  kv_router round_robin(on, 4, router_mode::round_robin, 1); // the rule only decides in kv mode
  (*m)->publish_capacities("router[rr]", round_robin, {});
  BOOST_REQUIRE(router.set_worker_capacity({0x100, 0}, 8));
  BOOST_REQUIRE(router.set_worker_capacity({0x101, 0}, 300));
  (*m)->publish_capacities("router[m]", router, {0x100, 0x101, 0x102});
  std::string text = reg->render();
  BOOST_TEST(has_line(text, R"(dynamo_router_kv_capacity_rule{router="router[m]"} 1)"));
  BOOST_TEST(has_line(text, R"(dynamo_router_kv_capacity_rule{router="router[off]"} 0)"));
  BOOST_TEST(has_line(text, R"(dynamo_router_kv_capacity_rule{router="router[rr]"} 0)"));
  BOOST_TEST(has_line(text, R"(dynamo_router_worker_kv_capacity_blocks{router="router[m]",worker_id="0000000000000100",dp_rank="0"} 8)"));
  BOOST_TEST(has_line(text, R"(dynamo_router_worker_kv_capacity_blocks{router="router[m]",worker_id="0000000000000101",dp_rank="0"} 300)"));
  auto seen = (*m)->routed_workers();
  BOOST_TEST(seen.size() == 4u);
  BOOST_TEST(seen[0x100].router == "router[m]");
  BOOST_TEST(seen[0x100].kv_capacity_rule);
  BOOST_TEST(seen[0x100].kv_capacity_blocks.value_or(0) == 8u);
  BOOST_TEST(!seen[0x102].kv_capacity_blocks); // no load report yet
  BOOST_TEST(!seen[7].kv_capacity_rule);
  BOOST_TEST(!seen[7].kv_capacity_blocks);

  router.remove_worker(0x100);
  (*m)->publish_capacities("router[m]", router, {0x101, 0x102});
  text = reg->render();
  BOOST_TEST(text.find(R"(worker_id="0000000000000100")") == std::string::npos);
  BOOST_TEST(has_line(text, R"(dynamo_router_worker_kv_capacity_blocks{router="router[m]",worker_id="0000000000000101",dp_rank="0"} 300)"));
  BOOST_TEST(!(*m)->routed_workers().count(0x100));

  // A restarted router (same name, nothing learned yet) takes the old series down.
  kv_router restarted(on, 4, router_mode::kv, 1);
  (*m)->publish_capacities("router[m]", restarted, {0x101, 0x102});
  BOOST_TEST(reg->render().find("dynamo_router_worker_kv_capacity_blocks{") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_second_set_on_the_same_registry_is_refused) {
  auto reg = std::make_shared<metrics::registry>();
  BOOST_REQUIRE(router_metrics::create(reg));
  BOOST_TEST(!router_metrics::create(reg));
  BOOST_TEST(!router_metrics::create(nullptr));
}

BOOST_AUTO_TEST_SUITE_END()
