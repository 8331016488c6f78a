// planes::zmq_vllm_source against hand-made vLLM-side sockets: live frames as
// they come, the replay request and answer framing, the end marker, and a
// replay the publisher never answers (timeout, then a fresh request works).
#include "planes/codec/zmq_io_loop.hpp"
#include "planes/event/zmq_vllm_source.hpp"

#include <boost/test/unit_test.hpp>
#include <zmq.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace dynamo;
using namespace dynamo::planes;
using namespace std::chrono_literals;

namespace {

struct seen {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::vector<bytes>> live;
  std::vector<std::pair<uint64_t, bytes>> replayed;
  std::vector<bool> ends;

  vllm_source_callbacks callbacks() {
    vllm_source_callbacks c;
    c.on_message = [this](std::span<const std::span<const uint8_t>> frames) {
      std::lock_guard lk{mtx};
      auto& m = live.emplace_back();
      for (auto f : frames)
        m.emplace_back(f.begin(), f.end());
      cv.notify_all();
    };
    c.on_replay_batch = [this](uint64_t seq, std::span<const uint8_t> p) {
      std::lock_guard lk{mtx};
      replayed.emplace_back(seq, bytes(p.begin(), p.end()));
      cv.notify_all();
    };
    c.on_replay_end = [this](bool complete) {
      std::lock_guard lk{mtx};
      ends.push_back(complete);
      cv.notify_all();
    };
    return c;
  }
  template <class P>
  bool wait(P pred) {
    std::unique_lock lk{mtx};
    return cv.wait_for(lk, 10s, pred);
  }
};

bytes be(uint64_t v) {
  bytes b(8);
  put_u64_be(b.data(), v);
  return b;
}

std::string bound(zmq::socket_t& s) {
  s.bind("tcp://127.0.0.1:*");
  return s.get(zmq::sockopt::last_endpoint);
}

} // namespace

BOOST_AUTO_TEST_SUITE(zmq_vllm_source_suite)

BOOST_AUTO_TEST_CASE(live_frames_and_a_replay_reach_the_callbacks) {
  auto ctx = shared_zmq_context();
  zmq::socket_t pub(*ctx, zmq::socket_type::pub), router(*ctx, zmq::socket_type::router);
  pub.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::linger, 0);
  seen s;
  zmq_vllm_source_options o;
  o.endpoint = bound(pub);
  o.replay_endpoint = bound(router);
  o.topic = "kv";
  o.callbacks = s.callbacks();
  auto src = make_zmq_vllm_source(o);
  BOOST_REQUIRE(src);
  // Slow joiner: publish until the subscription has reached the PUB socket.
  bytes payload{0x93, 0x01, 0x90, 0xc0}, zero = be(0), marker = be(~0ull);
  for (int i = 0; i < 500; ++i) {
    std::array<zmq::const_buffer, 3> parts{zmq::buffer(std::string_view{"kv"}), view(zero),
                                           view(payload)};
    (void)send_parts(pub, parts);
    std::unique_lock lk{s.mtx};
    if (s.cv.wait_for(lk, 20ms, [&] { return !s.live.empty(); }))
      break;
  }
  {
    std::lock_guard lk{s.mtx};
    BOOST_REQUIRE(!s.live.empty());
    BOOST_TEST(s.live[0].size() == 3u);
    BOOST_TEST((s.live[0][1] == be(0)));
    BOOST_TEST((s.live[0][2] == payload));
  }

  BOOST_REQUIRE((*src)->request_replay(5));
  std::vector<zmq::message_t> req;
  bool overflow = false;
  for (int i = 0; i < 500 && !recv_parts(router, req, 4, overflow); ++i)
    std::this_thread::sleep_for(10ms);
  BOOST_REQUIRE_EQUAL(req.size(), 3u); // [identity, "", start]
  BOOST_TEST(req[1].size() == 0u);
  BOOST_TEST(get_u64_be(req[2].data<uint8_t>()) == 5u);
  std::string id = req[0].to_string();
  for (uint64_t seq : {5u, 6u}) {
    bytes seq_be = be(seq);
    std::array<zmq::const_buffer, 4> parts{zmq::buffer(id), zmq::const_buffer{}, view(seq_be),
                                           view(payload)};
    BOOST_REQUIRE(send_parts(router, parts) == send_status::sent);
  }
  std::array<zmq::const_buffer, 4> end{zmq::buffer(id), zmq::const_buffer{}, view(marker),
                                       zmq::const_buffer{}};
  BOOST_REQUIRE(send_parts(router, end) == send_status::sent);
  BOOST_REQUIRE(s.wait([&] { return !s.ends.empty(); }));
  std::lock_guard lk{s.mtx};
  BOOST_REQUIRE_EQUAL(s.replayed.size(), 2u);
  BOOST_TEST(s.replayed[0].first == 5u);
  BOOST_TEST(s.replayed[1].first == 6u);
  BOOST_TEST((s.replayed[1].second == payload));
  BOOST_TEST(s.ends[0] == true);
  BOOST_TEST((*src)->stats().replays == 1u);
}

BOOST_AUTO_TEST_CASE(an_unanswered_replay_times_out_and_a_new_one_still_works) {
  auto ctx = shared_zmq_context();
  zmq::socket_t pub(*ctx, zmq::socket_type::pub), router(*ctx, zmq::socket_type::router);
  pub.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::linger, 0);
  seen s;
  zmq_vllm_source_options o;
  o.endpoint = bound(pub);
  o.replay_endpoint = bound(router);
  o.replay_timeout = 200ms;
  o.callbacks = s.callbacks();
  auto src = make_zmq_vllm_source(o);
  BOOST_REQUIRE(src);
  BOOST_REQUIRE((*src)->request_replay(0)); // never answered
  BOOST_REQUIRE(s.wait([&] { return !s.ends.empty(); }));
  {
    std::lock_guard lk{s.mtx};
    BOOST_TEST(s.ends[0] == false);
  }
  BOOST_TEST((*src)->stats().replay_timeouts == 1u);
  // The second request comes from a fresh socket; answer only that one.
  std::vector<zmq::message_t> req;
  bool overflow = false;
  BOOST_REQUIRE((*src)->request_replay(3));
  uint64_t start = 0;
  for (int i = 0; i < 500 && start != 3; ++i) {
    if (!recv_parts(router, req, 4, overflow)) {
      std::this_thread::sleep_for(10ms);
      continue;
    }
    start = get_u64_be(req[2].data<uint8_t>());
  }
  BOOST_REQUIRE_EQUAL(start, 3u);
  std::string id = req[0].to_string();
  bytes marker = be(~0ull);
  std::array<zmq::const_buffer, 4> end{zmq::buffer(id), zmq::const_buffer{}, view(marker),
                                       zmq::const_buffer{}};
  BOOST_REQUIRE(send_parts(router, end) == send_status::sent);
  BOOST_REQUIRE(s.wait([&] { return s.ends.size() == 2; }));
  std::lock_guard lk{s.mtx};
  BOOST_TEST(s.ends[1] == true);
}

BOOST_AUTO_TEST_CASE(replay_needs_an_endpoint_and_bad_endpoints_are_errors) {
  zmq_vllm_source_options o;
  o.endpoint = "tcp://127.0.0.1:1";
  auto src = make_zmq_vllm_source(o);
  BOOST_REQUIRE(src);
  auto r = (*src)->request_replay(0);
  BOOST_TEST(!r);
  BOOST_TEST((code_of(r.error()) == errc::invalid_argument));
  o.endpoint = "not an endpoint";
  BOOST_TEST(!make_zmq_vllm_source(o));
}

BOOST_AUTO_TEST_SUITE_END()
