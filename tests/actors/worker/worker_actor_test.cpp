#include "actors/core/supervisor.hpp"
#include "actors/core/system.hpp"
#include "actors/worker/engine_factory.hpp"
#include "actors/worker/worker_actor.hpp"
#include "actors/worker/worker_endpoint.hpp"
#include "planes/request/inproc_request_plane.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/mocker/token_stream.hpp"
#include "runtime/kv/block_hash.hpp"
#include "runtime/protocol/codec.hpp"
#include "tests/actors/worker/collected.hpp"

#include <caf/all.hpp>

#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <mutex>

using namespace dynamo;
using namespace dynamo::actors;
using namespace std::chrono_literals;

namespace {

const std::string endpoint = "dynamo/backend/generate";

using test::collected;

planes::call_handle call(planes::request_client& client, const std::string& address,
                         const protocol::preprocessed_request& req, std::shared_ptr<collected> out) {
  return test::collect_call(client, address, endpoint, protocol::encode(req), std::move(out));
}

protocol::preprocessed_request make_request(std::string id, uint32_t max_tokens) {
  protocol::preprocessed_request r;
  r.request_id = std::move(id);
  r.model = "mock";
  r.token_ids = {72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100}; // "Hello world"
  r.prompt_tokens = static_cast<uint32_t>(r.token_ids.size());
  r.stop.max_tokens = max_tokens;
  return r;
}

struct fixture {
  actor_runtime rt = make_actor_system(2);
  std::shared_ptr<planes::inproc_request_network> net = planes::make_inproc_request_network();
  std::unique_ptr<planes::request_server> server = planes::make_inproc_request_server(net);
  std::unique_ptr<planes::request_client> client = planes::make_inproc_request_client(net);
  std::shared_ptr<worker_handle> handle = std::make_shared<worker_handle>();
  std::mutex events_mtx;
  std::condition_variable load_cv;
  std::vector<protocol::kv_event> events;
  protocol::load_metrics load; ///< the last one published
  size_t load_reports = 0;
  std::vector<uint32_t> step_tokens; ///< on_step's tokens, in order
  caf::actor sup;

  explicit fixture(double speedup = 0, uint32_t max_num_seqs = 256) {
    mocker::mocker_config mc;
    mc.block_size = 4;
    mc.num_blocks = 64;
    mc.speedup_ratio = speedup;
    mc.max_num_seqs = max_num_seqs;
    worker_hooks hooks;
    hooks.on_kv_events = [this](std::vector<protocol::kv_event> evs) {
      std::lock_guard lk{events_mtx};
      events.insert(events.end(), evs.begin(), evs.end());
    };
    hooks.on_load = [this](const protocol::load_metrics& m) {
      std::lock_guard lk{events_mtx};
      load = m;
      ++load_reports;
      load_cv.notify_all();
    };
    hooks.on_step = [this](std::chrono::duration<double> took, uint32_t tokens) {
      BOOST_CHECK(took.count() >= 0.0);
      std::lock_guard lk{events_mtx};
      step_tokens.push_back(tokens);
    };
    child_spec spec;
    spec.name = "worker-0";
    spec.spawn = [mc, hooks](caf::actor_system& sys) {
      return spawn_worker(sys, {1, "worker-0"}, [mc] { return mocker::make_engine(mc); }, hooks);
    };
    spec.on_spawn = [h = handle](const caf::actor& a) { h->set(a); };
    supervisor_config sc;
    sc.initial_backoff = 1ms;
    sup = spawn_supervisor(*rt.system, sc, {spec});
    BOOST_REQUIRE(serve_worker(*server, endpoint, handle));
    for (int i = 0; i < 1000 && !handle->get(); ++i)
      std::this_thread::sleep_for(1ms);
    BOOST_REQUIRE(handle->get());
  }
  ~fixture() {
    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  }

  /// Waits (5 s at most) for a load report with `pred` true.
  template <class Pred>
  bool wait_load(Pred pred) {
    std::unique_lock lk{events_mtx};
    return load_cv.wait_for(lk, 5s, [&] { return pred(load); });
  }
  /// Waits (5 s at most) until `n` load reports have been published.
  bool wait_reports(size_t n) {
    std::unique_lock lk{events_mtx};
    return load_cv.wait_for(lk, 5s, [&] { return load_reports >= n; });
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(worker_actor)

BOOST_AUTO_TEST_CASE(a_mocker_card_advertises_the_context_its_kv_cache_holds) {
  // 8 blocks of 4 tokens: the engine refuses a 32-token prompt, so the card
  // (what the router and the frontend's length check read) says 32, not 8192.
  config::pool_config pool;
  pool.name = "backend";
  pool.model = "mock";
  pool.engine_opts.block_size = 4;
  pool.engine_opts.kv_blocks = 8;
  auto small = prepare_engines(pool);
  BOOST_REQUIRE(small);
  BOOST_TEST(small->plan.card.context_length == 32u);
  pool.engine_opts.context_length = 20; // a --context-length below the cache's holds
  auto capped = prepare_engines(pool);
  BOOST_REQUIRE(capped);
  BOOST_TEST(capped->plan.card.context_length == 20u);
  pool.engine_opts = {};
  auto roomy = prepare_engines(pool); // 16384 blocks of 16: the mocker's 8192
  BOOST_REQUIRE(roomy);
  BOOST_TEST(roomy->plan.card.context_length == 8192u);
}

BOOST_AUTO_TEST_CASE(streams_the_mocker_continuation_over_the_request_plane) {
  fixture f;
  auto out = std::make_shared<collected>();
  auto req = make_request("r1", 9);
  (void) call(*f.client, f.server->address(), req, out);
  BOOST_REQUIRE(out->wait());
  BOOST_TEST(!out->end_error);
  BOOST_TEST(out->tokens == mocker::continuation(req.token_ids, 9));
  BOOST_REQUIRE(!out->chunks.empty());
  BOOST_TEST(static_cast<int>(out->chunks.back().finish) ==
             static_cast<int>(protocol::finish_reason::length));
  // Two full blocks of the 11-token prompt (block size 4) were stored.
  std::lock_guard lk{f.events_mtx};
  BOOST_REQUIRE(!f.events.empty());
  BOOST_TEST(static_cast<int>(f.events.front().kind) ==
             static_cast<int>(protocol::kv_event_kind::stored));
}

BOOST_AUTO_TEST_CASE(each_step_reports_the_tokens_it_computed) {
  // The 11-token prompt in one step (its first token sampled there), then one
  // decode step per further token; the idle worker reports no steps.
  fixture f;
  auto out = std::make_shared<collected>();
  (void) call(*f.client, f.server->address(), make_request("r1", 9), out);
  BOOST_REQUIRE(out->wait());
  BOOST_TEST(!out->end_error);
  std::this_thread::sleep_for(20ms);
  std::lock_guard lk{f.events_mtx};
  BOOST_TEST(f.step_tokens == (std::vector<uint32_t>{11, 1, 1, 1, 1, 1, 1, 1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_idle_worker_keeps_reporting_its_load) {
  // The planner needs every live worker's report to scale a pool down; an
  // idle worker runs no steps, so the heartbeat (1 s) is what reports it.
  fixture f;
  BOOST_REQUIRE(f.wait_reports(3));
  std::lock_guard lk{f.events_mtx};
  BOOST_TEST(f.load.worker_id == 1u);
  BOOST_TEST(f.load.num_waiting == 0u);
  BOOST_TEST(f.load.kv_usage == 0.0f);
}

BOOST_AUTO_TEST_CASE(client_cancel_ends_the_stream) {
  fixture f(0.5); // slow enough to cancel mid-stream
  auto out = std::make_shared<collected>();
  auto h = call(*f.client, f.server->address(), make_request("r2", 5000), out);
  BOOST_REQUIRE(out->wait_tokens(2));
  h.cancel();
  BOOST_REQUIRE(out->wait());
  BOOST_TEST(static_cast<int>(code_of(out->end_error)) == static_cast<int>(errc::cancelled));
  BOOST_TEST(out->tokens.size() < 5000u);
}

BOOST_AUTO_TEST_CASE(worker_crash_fails_streams_as_closed_and_it_comes_back) {
  fixture f(0.5);
  auto out = std::make_shared<collected>();
  (void) call(*f.client, f.server->address(), make_request("r3", 5000), out);
  BOOST_REQUIRE(out->wait_tokens(2));
  caf::anon_send(f.handle->get(), crash_atom::value);
  BOOST_REQUIRE(out->wait());
  BOOST_TEST(static_cast<int>(code_of(out->end_error)) == static_cast<int>(errc::closed));
  // The supervisor restarts the worker; a new request succeeds.
  std::shared_ptr<collected> again;
  for (int i = 0; i < 100; ++i) {
    again = std::make_shared<collected>();
    auto req = make_request("r4-" + std::to_string(i), 3);
    (void) call(*f.client, f.server->address(), req, again);
    BOOST_REQUIRE(again->wait());
    if (!again->end_error)
      break;
    std::this_thread::sleep_for(5ms);
  }
  BOOST_TEST(!again->end_error);
  BOOST_TEST(again->tokens.size() == 3u);
}

BOOST_AUTO_TEST_CASE(malformed_requests_fail_the_stream) {
  fixture f;
  auto out = std::make_shared<collected>();
  (void) f.client->call(f.server->address(), endpoint, planes::bytes{0xc1, 0x00}, [](planes::bytes) {},
                        [out](const caf::error& e) {
                          std::lock_guard lk{out->mtx};
                          out->ended = true;
                          out->end_error = e;
                          out->cv.notify_all();
                        });
  BOOST_REQUIRE(out->wait());
  BOOST_TEST(static_cast<int>(code_of(out->end_error)) == static_cast<int>(errc::malformed_message));
}

BOOST_AUTO_TEST_CASE(cancelled_calls_free_the_engine_whether_decoding_or_queued) {
  fixture f(0.5, 1); // slow steps; one running request, the other queued behind it
  auto decoding = std::make_shared<collected>();
  auto queued = std::make_shared<collected>();
  auto h1 = call(*f.client, f.server->address(), make_request("long-1", 5000), decoding);
  BOOST_REQUIRE(decoding->wait_tokens(2));
  auto second = make_request("long-2", 5000);
  second.token_ids = {66, 121, 101, 32, 119, 111, 114, 108, 100}; // "Bye world": its own blocks
  auto h2 = call(*f.client, f.server->address(), second, queued);
  BOOST_REQUIRE(f.wait_load([](const protocol::load_metrics& m) { return m.num_waiting == 1; }));
  h2.cancel();
  h1.cancel();
  // Both aborted: nothing running or queued, every block back in the pool.
  BOOST_TEST(f.wait_load([](const protocol::load_metrics& m) {
    return m.num_running == 0 && m.num_waiting == 0 && m.active_decode_blocks == 0;
  }));
  // The queued one was dropped from the queue, not prefilled and then cut off.
  const auto never = kv::sequence_hashes_of_tokens(second.token_ids, 4).front();
  {
    std::lock_guard lk{f.events_mtx};
    for (const auto& e : f.events)
      for (const auto& b : e.blocks)
        BOOST_TEST(b.block_hash != never);
  }
  auto next = std::make_shared<collected>();
  auto req = make_request("next", 3);
  (void) call(*f.client, f.server->address(), req, next);
  BOOST_REQUIRE(next->wait());
  BOOST_TEST(!next->end_error);
  BOOST_TEST(next->tokens == mocker::continuation(req.token_ids, 3));
}

BOOST_AUTO_TEST_SUITE_END()
