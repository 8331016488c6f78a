// dynamo-planner's service over the in-process discovery and event planes:
// fake workers register ns/<pool>/generate and publish scripted load_metrics;
// the test drives tick() with its own clock and reads the decisions record
// back from the discovery plane, as the launcher would.
#include "apps/dynamo-planner/planner_service.hpp"
#include "planes/discovery/inproc_discovery.hpp"
#include "planes/event/inproc_event_plane.hpp"
#include "runtime/protocol/codec.hpp"
#include "tests/planes/support/support.hpp"

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <atomic>

using namespace dynamo;
using planes::testing::wait_until;

namespace {

constexpr const char* ns = "plan-test";

planes::discovery_options fast_discovery() {
  planes::discovery_options o;
  o.poll_interval = std::chrono::milliseconds(5);
  return o;
}

// A worker process as worker_service makes one: a publisher and a registration.
struct fake_worker {
  uint64_t id;
  std::unique_ptr<planes::event_publisher> pub;
  std::unique_ptr<planes::registration> reg;

  void report(float kv, uint32_t prefill_tokens = 0, uint32_t waiting = 0, uint64_t as_worker = 0) {
    protocol::load_metrics m;
    m.worker_id = as_worker ? as_worker : id;
    m.kv_usage = kv;
    m.active_prefill_tokens = prefill_tokens;
    m.num_waiting = waiting;
    BOOST_REQUIRE(pub->publish(apps::load_metrics_topic, protocol::encode(m)));
  }
};

struct cluster {
  std::shared_ptr<planes::inproc_discovery_store> store = planes::make_inproc_discovery_store();
  std::shared_ptr<planes::inproc_event_bus> bus = planes::make_inproc_event_bus();
  std::unique_ptr<planes::discovery_plane> workers_side = must(planes::make_inproc_discovery(store, fast_discovery()));
  std::unique_ptr<planes::discovery_plane> planner_side = must(planes::make_inproc_discovery(store, fast_discovery()));
  std::atomic<int64_t> now{0};
  std::vector<std::string> lines;
  std::mutex lines_mutex;

  static std::unique_ptr<planes::discovery_plane>
  must(expected<std::unique_ptr<planes::discovery_plane>> d) {
    BOOST_REQUIRE(d);
    return std::move(*d);
  }

  fake_worker add_worker(const std::string& pool, uint64_t id) {
    fake_worker w{id, planes::make_inproc_event_publisher(bus, id), nullptr};
    planes::instance_record rec;
    rec.endpoint = {ns, pool, "generate"};
    rec.instance = id;
    rec.request_address = "inproc-fake://request/" + std::to_string(id);
    rec.event_address = w.pub->address();
    rec.metadata = {{"role", pool}, {"model", "m"}, {"index", "0"}};
    auto reg = workers_side->register_instance(rec);
    BOOST_REQUIRE(reg);
    w.reg = std::move(*reg);
    return w;
  }

  apps::planner_service_config service_config(bool dry_run = false) {
    apps::planner_service_config c;
    c.namespace_name = ns;
    c.planner.enabled = true;
    c.planner.interval_ms = 1000;
    c.planner.min_replicas = 1;
    c.planner.max_replicas = 3;
    c.planner.predictor = "constant";
    c.planner.scale_down_stabilization_ms = 0; // scripted up and down within a second
    plan::pool_spec pre, dec;
    pre.name = "prefill";
    pre.role = config::worker_role::prefill;
    pre.model = "m";
    pre.prefill_capacity_tokens = 1000;
    dec.name = "decode";
    dec.role = config::worker_role::decode;
    dec.model = "m";
    c.pools = {pre, dec};
    c.dry_run = dry_run;
    c.clock = [this] { return now.load(); };
    c.on_decision = [this](const std::string& line) {
      std::lock_guard lk{lines_mutex};
      lines.push_back(line);
    };
    return c;
  }

  std::unique_ptr<apps::planner_service> start(apps::planner_service_config c) {
    apps::subscriber_factory factory = [this](planes::event_subscriber_callbacks cb) {
      return planes::make_inproc_event_subscriber(bus, std::move(cb));
    };
    auto s = apps::planner_service::start(*planner_side, factory, std::move(c));
    if (!s)
      BOOST_FAIL(describe(s.error()));
    return std::move(*s);
  }

  // The record as a launcher reads it.
  std::optional<plan::planner_decisions> record() {
    auto recs = workers_side->list(std::string{ns} + "/planner/decisions");
    BOOST_REQUIRE(recs);
    if (recs->empty())
      return std::nullopt;
    BOOST_REQUIRE_EQUAL(recs->size(), 1u);
    auto d = plan::from_metadata(recs->front().metadata);
    BOOST_REQUIRE(d);
    return *d;
  }
};

bool instances_are(apps::planner_service& s, uint32_t prefill, uint32_t decode) {
  return wait_until([&] {
    auto i = s.instances();
    return i["prefill"] == prefill && i["decode"] == decode;
  });
}

// One decode worker whose full KV cache, reported at t=500, makes tick(1000)
// decide decode 1 -> 2.
fake_worker decode_decision_at_1000(cluster& c, apps::planner_service& svc) {
  auto d1 = c.add_worker("decode", 0x21);
  BOOST_REQUIRE(instances_are(svc, 0, 1));
  c.now = 500;
  d1.report(0.95f);
  BOOST_REQUIRE(wait_until([&] { return svc.samples() == 1; }));
  BOOST_REQUIRE_EQUAL(svc.tick(1000).decisions.size(), 1u);
  return d1;
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_service_suite)

BOOST_AUTO_TEST_CASE(decisions_follow_scripted_load) {
  cluster c;
  auto svc = c.start(c.service_config());
  auto initial = c.record();
  BOOST_REQUIRE(initial);
  BOOST_TEST(initial->decision_id == 0u);
  BOOST_TEST((initial->replicas == std::map<std::string, uint32_t>{{"decode", 1}, {"prefill", 1}}));

  auto p1 = c.add_worker("prefill", 0x11);
  auto d1 = c.add_worker("decode", 0x21);
  BOOST_REQUIRE(instances_are(*svc, 1, 1));

  // Decode is full, prefill has a backlog of 2.5 steps: both scale up.
  c.now = 500;
  d1.report(0.95f);
  p1.report(0.0f, 2500);
  d1.report(0.9f, 0, 0, /*as an unknown worker*/ 0x99); // dropped
  BOOST_REQUIRE(wait_until([&] { return svc->samples() == 2; }));
  auto r1 = svc->tick(1000);
  BOOST_REQUIRE_EQUAL(r1.decisions.size(), 2u);
  BOOST_TEST(r1.decision_id == 1u);
  auto rec1 = c.record();
  BOOST_REQUIRE(rec1);
  BOOST_TEST(rec1->decision_id == 1u);
  BOOST_TEST((rec1->replicas == std::map<std::string, uint32_t>{{"decode", 2}, {"prefill", 2}}));
  {
    std::lock_guard lk{c.lines_mutex};
    BOOST_REQUIRE_EQUAL(c.lines.size(), 2u);
    BOOST_TEST(c.lines[0] ==
               R"({"at_ms":1000,"current":1,"decision_id":1,"event":"scaling_decision","observed":1,)"
               R"("pool":"prefill","reason":"scale up: predicted prefill_load 2.500 > 1.000","role":"prefill","target":2})");
  }

  // The launcher starts one more decode worker only; decode load drops on both.
  auto d2 = c.add_worker("decode", 0x22);
  BOOST_REQUIRE(instances_are(*svc, 1, 2));
  c.now = 1500;
  d1.report(0.1f);
  d2.report(0.1f);
  p1.report(0.0f, 2500);
  BOOST_REQUIRE(wait_until([&] { return svc->samples() == 5; }));
  auto r2 = svc->tick(2000);
  // Decode reached its target, so it may act again (down); prefill is still pending.
  BOOST_REQUIRE_EQUAL(r2.decisions.size(), 1u);
  BOOST_TEST(r2.decisions[0].pool == "decode");
  BOOST_TEST(r2.decisions[0].target == 1u);
  BOOST_TEST(r2.pools[0].verdict == "pending: observed 1 replicas, target 2");
  auto rec2 = c.record();
  BOOST_REQUIRE(rec2);
  BOOST_TEST(rec2->decision_id == 2u);
  BOOST_TEST((rec2->replicas == std::map<std::string, uint32_t>{{"decode", 1}, {"prefill", 2}}));

  // The launcher stops a decode worker: the planner forgets it and stops listening.
  BOOST_REQUIRE(d2.reg->deregister());
  BOOST_REQUIRE(instances_are(*svc, 1, 1));
  auto r3 = svc->tick(3000); // no samples in (2000, 3000]: nothing to act on
  BOOST_TEST(r3.decisions.empty());
  BOOST_TEST(r3.pools[1].verdict == "hold: no load metrics in the window");

  svc.reset(); // a clean exit removes the record
  BOOST_TEST(!c.record().has_value());
}

BOOST_AUTO_TEST_CASE(a_dry_run_publishes_nothing) {
  cluster c;
  auto svc = c.start(c.service_config(/*dry_run=*/true));
  auto d1 = c.add_worker("decode", 0x21);
  BOOST_REQUIRE(instances_are(*svc, 0, 1));
  c.now = 500;
  d1.report(0.95f);
  BOOST_REQUIRE(wait_until([&] { return svc->samples() == 1; }));
  auto r = svc->tick(1000);
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u);
  BOOST_TEST(svc->decisions().replicas.at("decode") == 2u);
  BOOST_TEST(!c.record().has_value());
  std::lock_guard lk{c.lines_mutex};
  BOOST_TEST(c.lines.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_failed_connector_call_is_retried_next_tick) {
  cluster c;
  std::vector<plan::planner_decisions> applied;
  int failures_left = 1;
  auto cfg = c.service_config();
  cfg.apply = [&](const plan::planner_decisions& d) -> expected<void> {
    applied.push_back(d); // tick thread = this thread
    if (failures_left-- > 0)
      return make_error(errc::io_error, "kubernetes API down");
    return {};
  };
  auto svc = c.start(std::move(cfg));
  BOOST_TEST(applied.empty()); // nothing decided yet: the config's replicas stay
  auto d1 = decode_decision_at_1000(c, *svc);
  BOOST_REQUIRE_EQUAL(applied.size(), 1u);
  BOOST_TEST(applied[0].decision_id == 1u);
  BOOST_TEST(applied[0].replicas.at("decode") == 2u);
  BOOST_TEST(c.record()->decision_id == 1u); // the record is written first

  // No new decision (decode is pending), but the failed one is applied again.
  BOOST_TEST(svc->tick(2000).decisions.empty());
  BOOST_REQUIRE_EQUAL(applied.size(), 2u);
  BOOST_TEST(applied[1].decision_id == 1u);
  BOOST_TEST(applied[1].replicas.at("decode") == 2u);
  (void)svc->tick(3000); // applied: not asked again
  BOOST_TEST(applied.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_dry_run_applies_nothing) {
  cluster c;
  int calls = 0;
  auto cfg = c.service_config(/*dry_run=*/true);
  cfg.apply = [&](const plan::planner_decisions&) -> expected<void> {
    ++calls;
    return {};
  };
  auto svc = c.start(std::move(cfg));
  auto d1 = decode_decision_at_1000(c, *svc);
  BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(throughput_from_scraped_frontend_metrics) {
  cluster c;
  auto cfg = c.service_config();
  cfg.planner.throughput_scaling = true;
  cfg.pools[1].capacity.decode_tokens_per_s = 100;
  // Two scrapes 1 s apart: 3 requests of 100 output tokens -> 300 tokens/s -> 3 replicas.
  std::atomic<int> scrape{0};
  cfg.fetch_metrics = [&scrape]() -> expected<std::string> {
    int n = scrape++;
    return fmt::format("dynamo_frontend_requests_total{{model=\"m\",status=\"success\"}} {}\n"
                       "dynamo_frontend_output_sequence_tokens_sum{{model=\"m\"}} {}\n"
                       "dynamo_frontend_output_sequence_tokens_count{{model=\"m\"}} {}\n",
                       n * 3, n * 300, n * 3);
  };
  auto svc = c.start(std::move(cfg));
  BOOST_TEST(svc->tick(1000).decisions.empty()); // first scrape: no rate yet
  auto r = svc->tick(2000);
  BOOST_REQUIRE_EQUAL(r.decisions.size(), 1u);
  BOOST_TEST(r.decisions[0].pool == "decode");
  BOOST_TEST(r.decisions[0].target == 3u);
  BOOST_TEST(r.decisions[0].reason == "throughput needs 3; load says hold: no load metrics in the window");
  auto rec = c.record();
  BOOST_REQUIRE(rec);
  BOOST_TEST(rec->replicas.at("decode") == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
