// Disaggregated prefill/decode between two mocker worker actors over the
// in-process request plane: the prefill worker holds the prompt's blocks and
// answers kv_push; the decode worker "pulls" (the mocker moves no bytes, but
// the hold is checked and released) and streams the same tokens as an
// aggregated worker. A pull that cannot reach the prefill worker prefills locally.
#include "actors/core/supervisor.hpp"
#include "actors/core/system.hpp"
#include "actors/worker/kv_handoff.hpp"
#include "actors/worker/worker_actor.hpp"
#include "actors/worker/worker_endpoint.hpp"
#include "planes/request/inproc_request_plane.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/mocker/token_stream.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "tests/actors/worker/collected.hpp"

#include <caf/all.hpp>

#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <mutex>

using namespace dynamo;
using namespace dynamo::actors;
using namespace std::chrono_literals;

namespace {

const std::string generate_ep = "dynamo/backend/generate";
const std::string push_ep = "dynamo/prefill/kv_push";

using test::collected;

std::shared_ptr<collected> call(planes::request_client& client, const std::string& address,
                                const std::string& endpoint, std::vector<uint8_t> payload) {
  auto out = std::make_shared<collected>();
  (void) test::collect_call(client, address, endpoint, std::move(payload), out);
  return out;
}

protocol::preprocessed_request make_request(std::string id, uint32_t max_tokens) {
  protocol::preprocessed_request r;
  r.request_id = std::move(id);
  r.model = "mock";
  for (uint32_t i = 0; i < 37; ++i) // 9 full blocks of 4 and one partial
    r.token_ids.push_back(40 + (i * 7) % 50);
  r.prompt_tokens = static_cast<uint32_t>(r.token_ids.size());
  r.stop.max_tokens = max_tokens;
  return r;
}

// One worker actor (role prefill or decode) behind its own request server.
struct worker_under_test {
  std::unique_ptr<planes::request_server> server;
  std::shared_ptr<worker_handle> handle = std::make_shared<worker_handle>();
  caf::actor sup;

  worker_under_test(actor_runtime& rt, const std::shared_ptr<planes::inproc_request_network>& net,
                    std::string role, uint64_t id, std::chrono::milliseconds hold_ttl) {
    server = planes::make_inproc_request_server(net);
    mocker::mocker_config mc;
    mc.block_size = 4;
    mc.num_blocks = 64;
    mc.speedup_ratio = 0;
    worker_config wc;
    wc.instance_id = id;
    wc.name = role;
    wc.role = protocol::parse_disagg_role(role).value();
    wc.transfer_address = server->address();
    wc.kv_push_endpoint = push_ep;
    wc.hold_ttl = hold_ttl;
    kv_handoff_config hc;
    hc.timeout = 500ms;
    wc.handoff = std::make_shared<kv_handoff>(hc, id, planes::make_inproc_request_client(net));
    child_spec spec;
    spec.name = role;
    spec.spawn = [mc, wc](caf::actor_system& sys) {
      return spawn_worker(sys, wc, [mc] { return mocker::make_engine(mc); }, {});
    };
    spec.on_spawn = [h = handle](const caf::actor& a) { h->set(a); };
    sup = spawn_supervisor(*rt.system, {}, {spec});
    BOOST_REQUIRE(serve_worker(*server, generate_ep, handle));
    if (role == "prefill")
      BOOST_REQUIRE(serve_kv_push(*server, push_ep, handle));
    for (int i = 0; i < 1000 && !handle->get(); ++i)
      std::this_thread::sleep_for(1ms);
    BOOST_REQUIRE(handle->get());
  }
  ~worker_under_test() { caf::anon_send_exit(sup, caf::exit_reason::user_shutdown); }
};

struct fixture {
  actor_runtime rt = make_actor_system(2);
  std::shared_ptr<planes::inproc_request_network> net = planes::make_inproc_request_network();
  std::unique_ptr<planes::request_client> client = planes::make_inproc_request_client(net);
  worker_under_test prefill;
  worker_under_test decode;

  explicit fixture(std::chrono::milliseconds hold_ttl = 30s)
    : prefill(rt, net, "prefill", 1, hold_ttl), decode(rt, net, "decode", 2, 30s) {}

  // Runs the prefill leg; returns its result (the hold and the first token).
  protocol::kv_prefill_result run_prefill(const protocol::preprocessed_request& req) {
    auto p = req;
    p.request_id = req.request_id + "-prefill";
    p.stop.max_tokens = 1;
    p.disagg = protocol::encode(protocol::disagg_params{protocol::disagg_role::prefill, {}});
    auto out = call(*client, prefill.server->address(), generate_ep, protocol::encode(p));
    BOOST_REQUIRE(out->wait());
    BOOST_REQUIRE(!out->end_error);
    BOOST_REQUIRE(!out->chunks.empty());
    auto result = protocol::decode<protocol::kv_prefill_result>(out->chunks.back().disagg);
    BOOST_REQUIRE(result);
    return *result;
  }

  std::shared_ptr<collected> run_decode(protocol::preprocessed_request req, protocol::kv_prefill_result from) {
    req.disagg = protocol::encode(protocol::disagg_params{protocol::disagg_role::decode, std::move(from)});
    auto out = call(*client, decode.server->address(), generate_ep, protocol::encode(req));
    BOOST_REQUIRE(out->wait());
    return out;
  }

  // Asks the prefill worker to release `hold` (what a decode worker does), or
  // with `release` false only whether it still holds it.
  protocol::kv_transfer_status release(const std::string& hold, bool release = true) {
    protocol::kv_push_request r;
    r.hold_id = hold;
    r.release = release;
    auto out = std::make_shared<std::pair<std::mutex, std::optional<protocol::kv_transfer_status>>>();
    auto done = std::make_shared<collected>();
    (void) client->call(
      prefill.server->address(), push_ep, protocol::encode(r),
      [out](planes::bytes item) {
        std::lock_guard lk{out->first};
        if (auto st = protocol::decode<protocol::kv_transfer_status>(item))
          out->second = *st;
      },
      [done](const caf::error&) {
        std::lock_guard lk{done->mtx};
        done->ended = true;
        done->cv.notify_all();
      });
    BOOST_REQUIRE(done->wait());
    std::lock_guard lk{out->first};
    BOOST_REQUIRE(out->second);
    return *out->second;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(worker_disagg)

BOOST_AUTO_TEST_CASE(prefill_holds_the_prompt_and_names_itself) {
  fixture f;
  auto req = make_request("a", 8);
  auto result = f.run_prefill(req);
  BOOST_TEST(result.prefill_worker_id == 1u);
  BOOST_TEST(result.transfer_address == f.prefill.server->address());
  BOOST_TEST(result.transfer_endpoint == push_ep);
  BOOST_TEST(result.hold_id == "a-prefill");
  BOOST_TEST(result.num_tokens == 37u);
  BOOST_TEST(result.block_ids.size() == 10u); // 37 tokens in blocks of 4
  BOOST_TEST(result.first_token == mocker::continuation(req.token_ids, 1).front());
}

BOOST_AUTO_TEST_CASE(decode_streams_the_aggregated_tokens_and_frees_the_hold) {
  fixture f;
  auto req = make_request("b", 8);
  auto result = f.run_prefill(req);
  auto out = f.run_decode(req, result);
  BOOST_TEST(!out->end_error);
  BOOST_TEST(out->tokens == mocker::continuation(req.token_ids, 8));
  BOOST_REQUIRE(!out->chunks.empty());
  BOOST_TEST(!out->chunks.front().prefilled_locally); // the router counts a remote prefill
  // The decode worker's pull released the hold: a second release finds nothing.
  auto again = f.release(result.hold_id);
  BOOST_TEST(static_cast<int>(again.code) == static_cast<int>(errc::not_found));
}

BOOST_AUTO_TEST_CASE(unreachable_prefill_worker_falls_back_to_local_prefill) {
  fixture f;
  auto req = make_request("c", 6);
  auto result = f.run_prefill(req);
  result.transfer_address = "inproc://nobody-here";
  auto out = f.run_decode(req, result);
  BOOST_TEST(!out->end_error);
  BOOST_TEST(out->tokens == mocker::continuation(req.token_ids, 6));
  BOOST_REQUIRE(!out->chunks.empty());
  BOOST_TEST(out->chunks.front().prefilled_locally); // the router counts a local fallback
}

BOOST_AUTO_TEST_CASE(unknown_hold_falls_back_to_local_prefill) {
  fixture f;
  auto req = make_request("d", 5);
  auto result = f.run_prefill(req);
  BOOST_TEST(f.release(result.hold_id).ok());
  auto out = f.run_decode(req, result); // the blocks are gone: kv_push says not_found
  BOOST_TEST(!out->end_error);
  BOOST_TEST(out->tokens == mocker::continuation(req.token_ids, 5));
  BOOST_REQUIRE(!out->chunks.empty());
  BOOST_TEST(out->chunks.front().prefilled_locally);
}

BOOST_AUTO_TEST_CASE(a_refused_hand_off_releases_the_hold_and_prefills_locally) {
  fixture f;
  auto req = make_request("r", 6);
  auto result = f.run_prefill(req);
  result.layout.block_size = 8; // the decode worker uses blocks of 4: it cannot pull these
  auto out = f.run_decode(req, result);
  BOOST_TEST(!out->end_error);
  BOOST_TEST(out->tokens == mocker::continuation(req.token_ids, 6));
  BOOST_REQUIRE(!out->chunks.empty());
  BOOST_TEST(out->chunks.front().prefilled_locally);
  // The decode worker told the prefill worker to free its hold (well before the 30 s TTL).
  bool released = false;
  for (int i = 0; i < 100 && !released; ++i) {
    released = f.release(result.hold_id, false).code == static_cast<uint8_t>(errc::not_found);
    if (!released)
      std::this_thread::sleep_for(10ms);
  }
  BOOST_TEST(released);
}

BOOST_AUTO_TEST_CASE(unpulled_holds_expire) {
  fixture f(50ms);
  auto result = f.run_prefill(make_request("e", 4));
  std::this_thread::sleep_for(400ms); // the worker's housekeeping frees it
  auto status = f.release(result.hold_id);
  BOOST_TEST(static_cast<int>(status.code) == static_cast<int>(errc::not_found));
}

BOOST_AUTO_TEST_SUITE_END()
