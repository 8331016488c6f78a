// A real (single-process) cluster: mocker workers behind ZeroMQ request and
// event planes, file-based discovery in a temp directory, a model watcher with
// a router per model. Checks the full path a dynamo-run request takes below HTTP.
#include "actors/core/system.hpp"
#include "actors/router/model_watcher.hpp"
#include "actors/worker/worker_service.hpp"
#include "planes/discovery/file_discovery.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/mocker/token_stream.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/components.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

using namespace dynamo;
using namespace dynamo::actors;
using namespace std::chrono_literals;

using dynamo::test::temp_dir;

namespace {

struct result {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<uint32_t> tokens;
  uint32_t cached = 0;
  bool first = true, ended = false;
  caf::error error;
  engine::chunk_callback cb() {
    return [this](expected<protocol::engine_output> c) {
      std::lock_guard lk{mtx};
      if (!c) {
        error = c.error();
        ended = true;
      } else {
        if (first)
          cached = c->cached_tokens;
        first = false;
        tokens.insert(tokens.end(), c->token_ids.begin(), c->token_ids.end());
        ended = c->finish != protocol::finish_reason::none;
      }
      cv.notify_all();
    };
  }
  bool wait() {
    std::unique_lock lk{mtx};
    return cv.wait_for(lk, 10s, [&] { return ended; });
  }
};

template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds limit = 5s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (p())
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return p();
}

/// `n` mocker workers of model "mock" with `context` tokens of context (their
/// card says so too); `num_blocks[i]`: worker i's KV blocks (1024 where not given).
std::unique_ptr<worker_service> start_mockers(caf::actor_system& sys, planes::discovery_plane& discovery,
                                              uint32_t n, uint32_t context,
                                              std::vector<uint32_t> num_blocks = {}) {
  worker_service_config wc;
  wc.card = {"mock", "mocker", context, 4, 1024, 64, 8192};
  wc.num_workers = n;
  mocker::mocker_config mc;
  mc.block_size = 4;
  mc.num_blocks = 1024;
  mc.speedup_ratio = 0;
  mc.context_length = context;
  auto w = worker_service::start(sys, discovery, wc, [mc, num_blocks](uint32_t i) -> engine_factory {
    auto m = mc;
    if (i < num_blocks.size())
      m.num_blocks = num_blocks[i];
    return [m] { return mocker::make_engine(m); };
  });
  BOOST_REQUIRE(w);
  return std::move(*w);
}

struct cluster {
  temp_dir dir{"dynamo-cluster-test"};
  actor_runtime rt = make_actor_system(2);
  std::unique_ptr<planes::discovery_plane> discovery;
  std::unique_ptr<worker_service> workers;
  std::unique_ptr<model_watcher> watcher;
  std::mutex mtx;
  std::vector<std::string> added, removed;
  std::vector<uint32_t> offered_contexts; ///< card.context_length of each on_model_added

  /// `num_blocks`: KV blocks per worker (1024 where not given); `context`:
  /// the workers' context length (and their card's).
  explicit cluster(route::router_mode mode, uint32_t n = 2, route::kv_router_config kv = {},
                   std::vector<uint32_t> num_blocks = {}, uint32_t context = 8192) {
    auto d = planes::make_file_discovery(dir.path.string());
    BOOST_REQUIRE(d);
    discovery = std::move(*d);
    workers = start_mockers(*rt.system, *discovery, n, context, std::move(num_blocks));
    model_watcher_config mwc;
    mwc.router.mode = mode;
    mwc.router.seed = 3;
    mwc.router.kv = kv;
    mwc.on_model_added = [this](const served_model& m) {
      std::lock_guard lk{mtx};
      added.push_back(m.card.name);
      offered_contexts.push_back(m.card.context_length);
    };
    mwc.on_model_removed = [this](const std::string& m) {
      std::lock_guard lk{mtx};
      removed.push_back(m);
    };
    auto mw = model_watcher::start(*rt.system, *discovery, mwc,
                                   [](const protocol::model_card&) -> expected<model_assets> {
                                     return mocker_assets();
                                   });
    BOOST_REQUIRE(mw);
    watcher = std::move(*mw);
    BOOST_REQUIRE(eventually([&] { return watcher->instance_count("mock") == n; }));
  }
};

protocol::preprocessed_request make_request(std::string id, std::vector<uint32_t> prompt, uint32_t n) {
  protocol::preprocessed_request r;
  r.request_id = std::move(id);
  r.model = "mock";
  r.token_ids = std::move(prompt);
  r.prompt_tokens = static_cast<uint32_t>(r.token_ids.size());
  r.stop.max_tokens = n;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_suite)

BOOST_AUTO_TEST_CASE(discovers_workers_and_streams_through_zmq) {
  cluster c(route::router_mode::round_robin);
  auto models = c.watcher->models();
  BOOST_REQUIRE_EQUAL(models.count("mock"), 1u);
  for (int i = 0; i < 4; ++i) {
    result r;
    auto req = make_request("rr-" + std::to_string(i), {65, 66, 67, 68, 69, 70}, 7);
    auto g = models["mock"].client->generate(req, r.cb());
    BOOST_REQUIRE(r.wait());
    BOOST_TEST(!r.error);
    BOOST_TEST(r.tokens == mocker::continuation(req.token_ids, 7));
  }
}

BOOST_AUTO_TEST_CASE(kv_routing_sends_a_repeated_prefix_to_the_worker_that_cached_it) {
  cluster c(route::router_mode::kv, 4);
  auto client = c.watcher->models()["mock"].client;
  // Five different prompts, each sent twice: the repeat must land on the
  // worker holding its blocks the first time (1 in 4 by chance, so a router
  // whose index is not fed by the workers' KV events passes with p = 1/1024).
  for (uint32_t k = 0; k < 5; ++k) {
    std::vector<uint32_t> prompt(64);
    for (uint32_t i = 0; i < 64; ++i)
      prompt[i] = 40 + (i * 7 + k * 13) % 80;
    result first;
    auto g1 = client->generate(make_request("kv-" + std::to_string(k), prompt, 4), first.cb());
    BOOST_REQUIRE(first.wait());
    BOOST_TEST(first.cached == 0u);
    std::this_thread::sleep_for(500ms); // the stored events reach the router (ms; slack for CI load)
    result again;
    auto g2 = client->generate(make_request("kv-again-" + std::to_string(k), prompt, 4), again.cb());
    BOOST_REQUIRE(again.wait());
    BOOST_TEST(again.cached >= 60u, "prompt " << k << ": repeat hit " << again.cached << " cached tokens");
  }
}

BOOST_AUTO_TEST_CASE(kv_capacity_from_the_workers_load_reports_keeps_a_big_prompt_off_a_small_worker) {
  // Worker 0 has 8 KV blocks, worker 1 1024; the watcher forwards their
  // kv_metrics reports (sent at least once a second) to the router.
  route::kv_router_config kv;
  kv.router_kv_capacity = true;
  cluster c(route::router_mode::kv, 2, kv, {8, 1024});
  std::this_thread::sleep_for(3000ms); // a load heartbeat from each worker (every 1 s; 2 s of slack for a loaded CI)
  auto router = c.watcher->models()["mock"].router->get();
  for (uint32_t k = 0; k < 6; ++k) {
    auto job = std::make_shared<route_job>();
    std::vector<uint32_t> prompt(64); // 16 blocks
    for (uint32_t i = 0; i < 64; ++i)
      prompt[i] = 40 + (i * 7 + k * 13) % 80;
    job->request = make_request("cap-" + std::to_string(k), prompt, 2);
    std::promise<uint64_t> routed;
    std::promise<void> ended;
    job->callbacks.on_routed = [&routed](uint64_t id) { routed.set_value(id); };
    job->callbacks.on_chunk = [](protocol::engine_output) {};
    job->callbacks.on_end = [&ended](const caf::error&) { ended.set_value(); };
    send_route(router, job);
    auto to = routed.get_future();
    BOOST_REQUIRE(to.wait_for(10s) == std::future_status::ready);
    BOOST_TEST(c.workers->index_of(to.get()).value_or(99) == 1u, "request " << k);
    BOOST_REQUIRE(ended.get_future().wait_for(10s) == std::future_status::ready);
  }
}

BOOST_AUTO_TEST_CASE(a_prompt_too_long_for_one_workers_context_goes_to_a_worker_it_fits) {
  // One worker of the model serves 8192 tokens of context, a second (started
  // with a smaller --context-length) 32, and says so in its card. Round robin
  // would send every other 40-token prompt to the small one, which refuses it
  // ("this model's context length is 32").
  cluster c(route::router_mode::round_robin, 1);
  auto small = start_mockers(*c.rt.system, *c.discovery, 1, 32);
  BOOST_REQUIRE(eventually([&] { return c.watcher->instance_count("mock") == 2u; }));
  auto client = c.watcher->models()["mock"].client;
  std::vector<uint32_t> prompt(40);
  for (uint32_t i = 0; i < 40; ++i)
    prompt[i] = 65 + i % 26;
  for (int i = 0; i < 4; ++i) {
    result r;
    auto g = client->generate(make_request("long-" + std::to_string(i), prompt, 3), r.cb());
    BOOST_REQUIRE(r.wait());
    BOOST_TEST(!r.error, "request " << i << ": " << describe(r.error));
    BOOST_TEST(r.tokens.size() == 3u, "request " << i);
  }
  small.reset();
}

BOOST_AUTO_TEST_CASE(a_prompt_that_fits_no_worker_is_a_context_length_error) {
  // Every worker refuses it: the client gets the refusal as an error value
  // (errc::context_length_exceeded: HTTP 400 at the frontend), not a final
  // chunk without tokens.
  cluster c(route::router_mode::round_robin, 2, {}, {}, 32);
  auto client = c.watcher->models()["mock"].client;
  result r;
  auto g = client->generate(make_request("too-long", std::vector<uint32_t>(40, 65), 3), r.cb());
  BOOST_REQUIRE(r.wait());
  BOOST_TEST(r.tokens.empty());
  BOOST_TEST(static_cast<int>(code_of(r.error)) == static_cast<int>(errc::context_length_exceeded),
             describe(r.error));
}

BOOST_AUTO_TEST_CASE(the_model_card_advertises_the_largest_context_among_its_workers) {
  // A worker with 32 tokens of context, then one with 8192: the model is
  // offered again with 8192 (the frontend's length check must not refuse a
  // prompt the second fits); when that worker leaves, with 32 again.
  cluster c(route::router_mode::round_robin, 1, {}, {}, 32);
  auto big = start_mockers(*c.rt.system, *c.discovery, 1, 8192);
  BOOST_REQUIRE(eventually([&] { return c.watcher->instance_count("mock") == 2u; }));
  BOOST_TEST(c.watcher->models()["mock"].card.context_length == 8192u);
  big.reset();
  BOOST_REQUIRE(eventually([&] { return c.watcher->instance_count("mock") == 1u; }));
  BOOST_TEST(c.watcher->models()["mock"].card.context_length == 32u);
  std::lock_guard lk{c.mtx};
  BOOST_TEST(c.offered_contexts == (std::vector<uint32_t>{32, 8192, 32}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(process_records_are_never_taken_for_workers) {
  cluster c(route::router_mode::round_robin);
  // The frontend's and the planner's own records (apps::publish_process); the
  // frontend's even made to look like a worker (the model's card, an address
  // nothing serves): the endpoint alone keeps the router off them.
  std::vector<std::unique_ptr<planes::registration>> regs;
  for (auto component : {protocol::frontend_component, protocol::planner_component}) {
    planes::instance_record rec;
    rec.endpoint = {"dynamo", std::string{component}, std::string{protocol::process_endpoint}};
    if (component == protocol::frontend_component) {
      rec.request_address = "tcp://127.0.0.1:9";
      rec.payload = protocol::encode(protocol::model_card{"mock", "mocker", 8192, 4, 1024, 64, 8192});
    }
    auto reg = c.discovery->register_instance(std::move(rec));
    BOOST_REQUIRE(reg);
    regs.push_back(std::move(*reg));
  }
  BOOST_REQUIRE_EQUAL(c.discovery->list("dynamo")->size(), 4u); // seen by every watcher
  std::this_thread::sleep_for(500ms);                             // several discovery polls
  BOOST_TEST(c.watcher->instance_count("mock") == 2u);
  auto client = c.watcher->models()["mock"].client;
  for (int i = 0; i < 6; ++i) { // round robin would reach a third instance
    result r;
    auto g = client->generate(make_request("p-" + std::to_string(i), {65, 66, 67}, 3), r.cb());
    BOOST_REQUIRE(r.wait());
    BOOST_TEST(!r.error, "request " << i);
  }
}

BOOST_AUTO_TEST_CASE(model_disappears_when_its_workers_deregister) {
  cluster c(route::router_mode::round_robin, 1);
  c.workers.reset();
  BOOST_TEST(eventually([&] {
    std::lock_guard lk{c.mtx};
    return c.removed.size() == 1;
  }));
  BOOST_TEST(c.watcher->models().empty());
}

BOOST_AUTO_TEST_SUITE_END()
