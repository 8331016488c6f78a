#include "actors/core/supervisor.hpp"
#include "actors/core/system.hpp"
#include "actors/router/routed_client.hpp"
#include "actors/router/router_actor.hpp"
#include "actors/worker/kv_handoff.hpp"
#include "actors/worker/worker_actor.hpp"
#include "actors/worker/worker_endpoint.hpp"
#include "planes/request/inproc_request_plane.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/mocker/token_stream.hpp"

#include <caf/all.hpp>

#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <future>
#include <mutex>
#include <set>

using namespace dynamo;
using namespace dynamo::actors;
using namespace std::chrono_literals;

namespace {

const std::string endpoint = "dynamo/backend/generate";

struct stream_result {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<uint32_t> tokens;
  protocol::finish_reason finish = protocol::finish_reason::none;
  caf::error error;
  bool ended = false;
  size_t chunks = 0;

  engine::chunk_callback callback() {
    return [this](expected<protocol::engine_output> c) {
      std::lock_guard lk{mtx};
      if (!c) {
        error = c.error();
        ended = true;
      } else {
        ++chunks;
        tokens.insert(tokens.end(), c->token_ids.begin(), c->token_ids.end());
        if (c->finish != protocol::finish_reason::none) {
          finish = c->finish;
          ended = true;
        }
      }
      cv.notify_all();
    };
  }
  bool wait(std::chrono::milliseconds t = 10s) {
    std::unique_lock lk{mtx};
    return cv.wait_for(lk, t, [&] { return ended; });
  }
  bool wait_tokens(size_t n) {
    std::unique_lock lk{mtx};
    return cv.wait_for(lk, 10s, [&] { return tokens.size() >= n || ended; });
  }
};

struct worker_slot {
  std::unique_ptr<planes::request_server> server;
  std::shared_ptr<worker_handle> handle = std::make_shared<worker_handle>();
  caf::actor sup;
  uint64_t id = 0;
};

struct cluster {
  actor_runtime rt = make_actor_system(2);
  std::shared_ptr<planes::inproc_request_network> net = planes::make_inproc_request_network();
  std::shared_ptr<planes::request_client> client = planes::make_inproc_request_client(net);
  std::vector<worker_slot> workers;
  caf::actor router;

  /// `num_blocks`: KV blocks per worker (256 where not given). Workers' load
  /// reports reach the router as model_watcher forwards them from the event plane.
  cluster(size_t n, double speedup, route::router_mode mode = route::router_mode::round_robin,
          std::chrono::milliseconds no_worker_wait = 3s, route::kv_router_config kv = {},
          std::vector<uint32_t> num_blocks = {}, std::shared_ptr<route::router_metrics> metrics = nullptr) {
    router_actor_config rc;
    rc.metrics = std::move(metrics);
    rc.no_worker_wait = no_worker_wait;
    rc.mode = mode;
    rc.kv = kv;
    rc.block_size = 4;
    rc.seed = 7;
    router = spawn_router(*rt.system, rc, client);
    for (size_t i = 0; i < n; ++i) {
      worker_slot w;
      w.id = 0x100 + i;
      w.server = planes::make_inproc_request_server(net);
      mocker::mocker_config mc;
      mc.block_size = 4;
      mc.num_blocks = i < num_blocks.size() ? num_blocks[i] : 256;
      mc.speedup_ratio = speedup;
      worker_hooks hooks;
      hooks.on_load = [r = router](const protocol::load_metrics& m) {
        caf::anon_send(r, worker_load_atom::value, m);
      };
      child_spec spec;
      spec.name = "worker";
      spec.spawn = [mc, hooks, id = w.id](caf::actor_system& sys) {
        return spawn_worker(sys, {id, "worker"}, [mc] { return mocker::make_engine(mc); }, hooks);
      };
      spec.on_spawn = [h = w.handle](const caf::actor& a) { h->set(a); };
      supervisor_config sc;
      sc.initial_backoff = 1ms;
      w.sup = spawn_supervisor(*rt.system, sc, {spec});
      BOOST_REQUIRE(serve_worker(*w.server, endpoint, w.handle));
      for (int k = 0; k < 1000 && !w.handle->get(); ++k)
        std::this_thread::sleep_for(1ms);
      caf::anon_send(router, add_worker_atom::value, worker_info{w.id, w.server->address(), endpoint, true});
      workers.push_back(std::move(w));
    }
  }
  ~cluster() {
    for (auto& w : workers)
      caf::anon_send_exit(w.sup, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  }
};

// Prefill-first as a frontend wires it: a prefill worker (mocker blocks of
// `prefill_block` tokens) behind its own router in a prefill_pool, and a decode
// worker (blocks of 4) behind the client's router.
struct disagg_cluster {
  actor_runtime rt = make_actor_system(2);
  std::shared_ptr<planes::inproc_request_network> net = planes::make_inproc_request_network();
  std::shared_ptr<planes::request_client> client = planes::make_inproc_request_client(net);
  std::vector<worker_slot> workers;
  caf::actor decode_router;
  std::shared_ptr<prefill_pool> pool = std::make_shared<prefill_pool>();

  explicit disagg_cluster(uint32_t prefill_block) {
    router_actor_config rc;
    rc.block_size = 4;
    rc.seed = 7;
    decode_router = spawn_router(*rt.system, rc, client);
    pool->router = std::make_shared<actor_handle>(spawn_router(*rt.system, rc, client));
    add(protocol::disagg_role::prefill, prefill_block, pool->router->get());
    add(protocol::disagg_role::decode, 4, decode_router);
    pool->instances = 1;
  }
  void add(protocol::disagg_role role, uint32_t block_size, const caf::actor& router) {
    const std::string push = "dynamo/prefill/kv_push";
    worker_slot w;
    w.id = 0x200 + workers.size();
    w.server = planes::make_inproc_request_server(net);
    mocker::mocker_config mc;
    mc.block_size = block_size;
    mc.num_blocks = 256;
    mc.speedup_ratio = 0;
    worker_config wc;
    wc.instance_id = w.id;
    wc.role = role;
    wc.transfer_address = w.server->address();
    wc.kv_push_endpoint = push;
    kv_handoff_config hc;
    hc.timeout = 500ms;
    wc.handoff = std::make_shared<kv_handoff>(hc, w.id, client);
    child_spec spec;
    spec.name = "worker";
    spec.spawn = [mc, wc](caf::actor_system& sys) {
      return spawn_worker(sys, wc, [mc] { return mocker::make_engine(mc); }, {});
    };
    spec.on_spawn = [h = w.handle](const caf::actor& a) { h->set(a); };
    w.sup = spawn_supervisor(*rt.system, {}, {spec});
    BOOST_REQUIRE(serve_worker(*w.server, endpoint, w.handle));
    if (role == protocol::disagg_role::prefill)
      BOOST_REQUIRE(serve_kv_push(*w.server, push, w.handle));
    for (int k = 0; k < 1000 && !w.handle->get(); ++k)
      std::this_thread::sleep_for(1ms);
    caf::anon_send(router, add_worker_atom::value, worker_info{w.id, w.server->address(), endpoint, true});
    workers.push_back(std::move(w));
  }
  ~disagg_cluster() {
    for (auto& w : workers)
      caf::anon_send_exit(w.sup, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(decode_router, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(pool->router->get(), caf::exit_reason::user_shutdown);
  }

  // One prefill-first request; returns {remote, local_fallback} counted by on_disagg.
  std::pair<int, int> serve_one(const protocol::preprocessed_request& req) {
    auto counts = std::make_shared<std::pair<std::atomic<int>, std::atomic<int>>>();
    routed_client_config cc;
    cc.max_local_prefill_length = 4;
    cc.on_disagg = [counts](const std::string&, bool remote) { (remote ? counts->first : counts->second)++; };
    routed_client rcl(decode_router, cc);
    rcl.set_prefill_pool(pool);
    stream_result r;
    auto gen = rcl.generate(req, r.callback());
    BOOST_REQUIRE(r.wait());
    BOOST_TEST(!r.error);
    BOOST_TEST(r.tokens == mocker::continuation(req.token_ids, req.stop.max_tokens));
    return {counts->first.load(), counts->second.load()};
  }
};

protocol::preprocessed_request make_request(const std::string& id, uint32_t max_tokens) {
  protocol::preprocessed_request r;
  r.request_id = id;
  r.token_ids = {10, 20, 30, 40, 50, 60, 70, 80, 90};
  r.prompt_tokens = 9;
  r.stop.max_tokens = max_tokens;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(routed_client_suite)

BOOST_AUTO_TEST_CASE(streams_through_the_router) {
  cluster c(2, 0);
  routed_client client(c.router);
  stream_result r;
  auto req = make_request("a", 12);
  auto gen = client.generate(req, r.callback());
  BOOST_REQUIRE(r.wait());
  BOOST_TEST(!r.error);
  BOOST_TEST(r.tokens == mocker::continuation(req.token_ids, 12));
  BOOST_TEST(static_cast<int>(r.finish) == static_cast<int>(protocol::finish_reason::length));
}

BOOST_AUTO_TEST_CASE(a_worker_refusal_is_an_error_value_with_its_code) {
  // The worker refuses a prompt past its context (the mocker's 8192): the
  // caller gets an error carrying the worker's code and message, never a
  // final chunk that reads as an empty success.
  cluster c(1, 0);
  routed_client client(c.router);
  stream_result r;
  auto req = make_request("too-long", 4);
  req.token_ids.assign(9000, 65);
  req.prompt_tokens = 9000;
  auto gen = client.generate(req, r.callback());
  BOOST_REQUIRE(r.wait());
  BOOST_TEST(r.chunks == 0u);
  BOOST_TEST(static_cast<int>(code_of(r.error)) == static_cast<int>(errc::context_length_exceeded));
  BOOST_TEST(message_of(r.error).find("context length is") != std::string::npos, message_of(r.error));
}

BOOST_AUTO_TEST_CASE(no_workers_is_an_error_after_the_wait) {
  cluster c(0, 0, route::router_mode::round_robin, 50ms);
  routed_client client(c.router);
  stream_result r;
  auto gen = client.generate(make_request("b", 4), r.callback());
  BOOST_REQUIRE(r.wait());
  BOOST_TEST(static_cast<int>(code_of(r.error)) == static_cast<int>(errc::no_workers));
}

BOOST_AUTO_TEST_CASE(migrates_mid_stream_without_losing_or_duplicating_tokens) {
  cluster c(2, 0.5);
  routed_client client(c.router);
  stream_result r;
  auto req = make_request("m", 40);
  auto gen = client.generate(req, r.callback());
  BOOST_REQUIRE(r.wait_tokens(3));
  // Crash whichever worker serves it (both, to be sure: the second crash hits
  // an idle worker, which its supervisor restarts).
  for (auto& w : c.workers)
    if (auto a = w.handle->get())
      caf::anon_send(a, crash_atom::value);
  // Both restart within milliseconds; the request continues on one of them.
  BOOST_REQUIRE(r.wait());
  BOOST_TEST(!r.error);
  BOOST_TEST(r.tokens == mocker::continuation(req.token_ids, 40));
  BOOST_TEST(client.stats().migrations_ongoing.load() >= 1u);
}

BOOST_AUTO_TEST_CASE(waits_for_a_worker_that_joins_late) {
  cluster c(0, 0);
  routed_client client(c.router);
  stream_result r;
  auto req = make_request("late", 5);
  auto gen = client.generate(req, r.callback());
  // A worker joins after the request was parked.
  auto server = planes::make_inproc_request_server(c.net);
  auto handle = std::make_shared<worker_handle>();
  mocker::mocker_config mc;
  mc.block_size = 4;
  mc.num_blocks = 64;
  mc.speedup_ratio = 0;
  auto worker = spawn_worker(*c.rt.system, {0x200, "late"}, [mc] { return mocker::make_engine(mc); }, {});
  handle->set(worker);
  BOOST_REQUIRE(serve_worker(*server, endpoint, handle));
  caf::anon_send(c.router, add_worker_atom::value, worker_info{0x200, server->address(), endpoint, true});
  BOOST_REQUIRE(r.wait());
  BOOST_TEST(!r.error);
  BOOST_TEST(r.tokens == mocker::continuation(req.token_ids, 5));
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(cancel_stops_the_stream) {
  cluster c(1, 0.5);
  routed_client client(c.router);
  stream_result r;
  auto gen = client.generate(make_request("c", 5000), r.callback());
  BOOST_REQUIRE(r.wait_tokens(2));
  gen->cancel();
  BOOST_REQUIRE(r.wait());
  BOOST_TEST(static_cast<int>(code_of(r.error)) == static_cast<int>(errc::cancelled));
}

BOOST_AUTO_TEST_CASE(a_job_sent_to_a_dead_router_fails_instead_of_waiting) {
  cluster c(1, 0);
  caf::anon_send_exit(c.router, caf::exit_reason::kill);
  caf::scoped_actor self{*c.rt.system};
  self->wait_for(c.router);
  routed_client_config cc;
  cc.retry_window = 300ms;
  routed_client client(c.router, cc);
  stream_result r;
  auto g = client.generate(make_request("to-the-dead", 4), r.callback());
  // Its retries (same dead router) end after the retry window, with an error.
  BOOST_REQUIRE(r.wait(5s));
  BOOST_TEST(static_cast<bool>(r.error));
  BOOST_TEST(r.tokens.empty());
}

BOOST_AUTO_TEST_CASE(a_crashed_supervised_router_comes_back_with_its_workers) {
  cluster c(1, 0);
  router_actor_config rc;
  rc.block_size = 4;
  auto info = worker_info{c.workers[0].id, c.workers[0].server->address(), endpoint, true};
  std::atomic<int> restarts{0};
  auto sr = spawn_supervised_router(*c.rt.system, rc, c.client,
                                    [&](const std::shared_ptr<actor_handle>& h) {
                                      ++restarts;
                                      caf::anon_send(h->get(), add_worker_atom::value, info);
                                    });
  BOOST_REQUIRE(sr.handle->get());
  caf::anon_send(sr.handle->get(), add_worker_atom::value, info);
  routed_client client(sr.handle);
  stream_result before;
  auto g1 = client.generate(make_request("before-crash", 5), before.callback());
  BOOST_REQUIRE(before.wait());
  BOOST_TEST(!before.error);
  auto first = sr.handle->get();
  caf::anon_send(first, crash_atom::value);
  for (int i = 0; i < 2000 && sr.handle->get() == first; ++i)
    std::this_thread::sleep_for(1ms);
  BOOST_REQUIRE(sr.handle->get() != first);
  BOOST_TEST(restarts.load() == 1);
  stream_result after;
  auto g2 = client.generate(make_request("after-crash", 5), after.callback());
  BOOST_REQUIRE(after.wait());
  BOOST_TEST(!after.error);
  BOOST_TEST(after.tokens == mocker::continuation(make_request("x", 5).token_ids, 5));
  caf::anon_send_exit(sr.supervisor, caf::exit_reason::user_shutdown);
}

// Sends `tokens` prompt tokens through the router; the instance it went to.
uint64_t route_once(const caf::actor& router, const std::string& id, uint32_t tokens) {
  auto job = std::make_shared<route_job>();
  job->request = make_request(id, 2);
  job->request.token_ids.resize(tokens);
  for (uint32_t k = 0; k < tokens; ++k)
    job->request.token_ids[k] = 100 + k;
  job->request.prompt_tokens = tokens;
  std::promise<uint64_t> routed;
  std::promise<void> ended;
  job->callbacks.on_routed = [&routed](uint64_t to) { routed.set_value(to); };
  job->callbacks.on_chunk = [](protocol::engine_output) {};
  job->callbacks.on_end = [&ended](const caf::error&) { ended.set_value(); };
  send_route(router, job);
  auto to = routed.get_future();
  BOOST_REQUIRE(to.wait_for(10s) == std::future_status::ready);
  BOOST_REQUIRE(ended.get_future().wait_for(10s) == std::future_status::ready);
  return to.get();
}

BOOST_AUTO_TEST_CASE(a_prompt_goes_to_a_worker_whose_advertised_context_it_fits) {
  // Round robin over 0x100 (its card says 32 tokens of context) and 0x101
  // (unknown): 40-token prompts all go to 0x101; short ones alternate.
  cluster c(2, 0);
  caf::anon_send(c.router, add_worker_atom::value,
                 worker_info{0x100, c.workers[0].server->address(), endpoint, true, 32});
  for (int i = 0; i < 4; ++i)
    BOOST_TEST(route_once(c.router, "long-" + std::to_string(i), 40) == 0x101u, "request " << i);
  std::set<uint64_t> short_ones;
  for (int i = 0; i < 4; ++i)
    short_ones.insert(route_once(c.router, "short-" + std::to_string(i), 8));
  BOOST_TEST(short_ones.size() == 2u);
  // Neither fits: the request still goes (the worker's refusal is the answer).
  caf::anon_send(c.router, add_worker_atom::value,
                 worker_info{0x101, c.workers[1].server->address(), endpoint, true, 32});
  std::set<uint64_t> none_fit;
  for (int i = 0; i < 4; ++i)
    none_fit.insert(route_once(c.router, "none-" + std::to_string(i), 40));
  BOOST_TEST(none_fit.size() == 2u);
}

BOOST_AUTO_TEST_CASE(the_capacity_a_load_report_teaches_the_router_is_on_metrics_until_the_worker_leaves) {
  // The workers' load reports (8 and 300 KV blocks; one at start, then
  // about once a second) reach the router as the model watcher forwards them.
  auto registry = std::make_shared<metrics::registry>();
  auto rm = route::router_metrics::create(registry);
  BOOST_REQUIRE(rm);
  route::kv_router_config kv;
  kv.router_kv_capacity = true;
  cluster c(2, 0, route::router_mode::kv, 3s, kv, {8, 300}, *rm);
  const std::string small = R"(dynamo_router_worker_kv_capacity_blocks{router="router",worker_id="0000000000000100",dp_rank="0"} 8)";
  const std::string big = R"(dynamo_router_worker_kv_capacity_blocks{router="router",worker_id="0000000000000101",dp_rank="0"} 300)";
  auto shows = [&](const std::string& line) { return registry->render().find("\n" + line + "\n") != std::string::npos; };
  auto eventually = [](auto&& cond) {
    for (int i = 0; i < 1000 && !cond(); ++i)
      std::this_thread::sleep_for(10ms);
    return cond();
  };
  BOOST_TEST(eventually([&] { return shows(small) && shows(big); }));
  BOOST_TEST(shows(R"(dynamo_router_kv_capacity_rule{router="router"} 1)"));
  // The admin API's view: a report can overtake its worker's add_worker, which lists it.
  auto learned = [&](uint64_t id) { return (*rm)->routed_workers()[id].kv_capacity_blocks.value_or(0); };
  BOOST_TEST(eventually([&] { return learned(0x100) == 8u && learned(0x101) == 300u; }));
  caf::anon_send(c.router, remove_worker_atom::value, uint64_t{0x100});
  BOOST_TEST(eventually([&] { return registry->render().find("0000000000000100") == std::string::npos; }));
  BOOST_TEST(shows(big));
  BOOST_TEST(!(*rm)->routed_workers().count(0x100));
}

// dynamo_frontend_disagg_requests_total{prefill}: remote only when the decode
// worker used the prefill worker's KV; a hand-off it refuses (or whose
// transfer fails) and prefills itself counts as local_fallback.
BOOST_AUTO_TEST_CASE(with_kv_capacity_on_a_request_avoids_the_worker_it_would_overflow) {
  // Worker 0x100 reports 8 KV blocks, 0x101 256: a 16-block prompt fits only
  // the second. Without the load reports (or the option), kv routing spreads
  // these sequential requests by its own tie-breaks and load.
  route::kv_router_config kv;
  kv.router_kv_capacity = true;
  cluster c(2, 0, route::router_mode::kv, 3s, kv, {8, 256});
  for (int i = 0; i < 6; ++i) {
    auto job = std::make_shared<route_job>();
    job->request = make_request("big-" + std::to_string(i), 2);
    job->request.token_ids.resize(64);
    for (uint32_t k = 0; k < 64; ++k)
      job->request.token_ids[k] = 100 + i * 64 + k;
    job->request.prompt_tokens = 64;
    std::promise<uint64_t> routed;
    std::promise<void> ended;
    job->callbacks.on_routed = [&routed](uint64_t id) { routed.set_value(id); };
    job->callbacks.on_chunk = [](protocol::engine_output) {};
    job->callbacks.on_end = [&ended](const caf::error&) { ended.set_value(); };
    send_route(c.router, job);
    auto to = routed.get_future();
    BOOST_REQUIRE(to.wait_for(10s) == std::future_status::ready);
    BOOST_TEST(to.get() == 0x101u, "request " << i);
    BOOST_REQUIRE(ended.get_future().wait_for(10s) == std::future_status::ready);
  }
}

BOOST_AUTO_TEST_CASE(a_prefill_first_request_counts_remote_only_when_its_kv_was_used) {
  disagg_cluster c(4);
  auto [remote, fallback] = c.serve_one(make_request("p1", 6));
  BOOST_TEST(remote == 1);
  BOOST_TEST(fallback == 0);
}

BOOST_AUTO_TEST_CASE(a_hand_off_the_decode_worker_refuses_counts_as_a_local_fallback) {
  disagg_cluster c(8); // the decode worker's blocks hold 4 tokens: it cannot use these
  auto [remote, fallback] = c.serve_one(make_request("p2", 6));
  BOOST_TEST(remote == 0);
  BOOST_TEST(fallback == 1);
}

BOOST_AUTO_TEST_SUITE_END()
