// ZeroMQ-only request plane behaviour: real processes killed with SIGKILL,
// hostile raw sockets, heartbeat loss, and orphan reconciliation.
#include "planes/request/request_wire.hpp"
#include "planes/request/zmq_request_plane.hpp"

#include "../support/support.hpp"
#include "request_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <atomic>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
namespace rw = dynamo::planes::request_wire;

namespace {

std::string ms(std::chrono::milliseconds d) {
  return std::to_string(d.count());
}

/// A raw socket on the test thread, to play a broken or hostile peer.
struct raw_socket {
  zmq::context_t ctx{1};
  zmq::socket_t sock;
  explicit raw_socket(zmq::socket_type type) : sock(ctx, type) {
    sock.set(zmq::sockopt::linger, 0);
    sock.set(zmq::sockopt::rcvtimeo, 10000);
  }
  void send(std::vector<bytes> frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      (void)sock.send(zmq::buffer(frames[i]),
                      i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  std::vector<zmq::message_t> recv() {
    std::vector<zmq::message_t> parts;
    BOOST_REQUIRE(zmq::recv_multipart(sock, std::back_inserter(parts)));
    return parts;
  }
};

bytes header(rw::kind k, uint64_t id) {
  auto h = rw::encode_header(k, id);
  return bytes(h.begin(), h.end());
}

std::optional<rw::header> header_of(const zmq::message_t& m) {
  return rw::decode_header({m.data<uint8_t>(), m.size()});
}

} // namespace

BOOST_AUTO_TEST_SUITE(request_plane_zmq)

BOOST_AUTO_TEST_CASE(killed_server_process_fails_its_calls_as_disconnected) {
  auto timing = test_timing();
  auto peer = spawn_planes_peer({"serve-request", "tcp://127.0.0.1:0", "dyn/worker/generate",
                                   ms(timing.heartbeat_interval), ms(timing.peer_timeout)});
  BOOST_REQUIRE(peer);
  auto line = peer->read_line();
  BOOST_REQUIRE(line && line->starts_with("ADDR "));
  auto client = make_zmq_request_client({timing});
  call_recorder rec;
  (void)client->call(line->substr(5), "dyn/worker/generate", to_bytes("x"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_items(1));
  peer->kill_hard();
  // The DEALER's monitor reports the lost TCP connection: the call fails long
  // before any timeout (the deadline only bounds a failing test).
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code_of(rec.error()) == errc::disconnected);
  BOOST_TEST(rec.items() == std::vector<std::string>{"hello"});
}

BOOST_AUTO_TEST_CASE(killed_client_process_gets_its_streams_cancelled) {
  auto timing = test_timing();
  std::atomic<int> opened{0}, cancelled{0}; // declared before the server: it outlives them
  std::mutex mutex;
  std::vector<response_stream_ptr> held;
  auto server = make_zmq_request_server({"tcp://127.0.0.1:0", timing});
  BOOST_REQUIRE(server);
  BOOST_REQUIRE((*server)->serve("dyn/worker/generate", [&](bytes, response_stream_ptr s) {
    s->on_cancel([&] { ++cancelled; });
    ++opened;
    std::lock_guard lock{mutex};
    held.push_back(std::move(s)); // sends nothing: only the heartbeat can notice
  }));
  auto peer = spawn_planes_peer({"call-request", (*server)->address(), "dyn/worker/generate",
                                   ms(timing.heartbeat_interval), ms(timing.peer_timeout)});
  BOOST_REQUIRE(peer);
  BOOST_REQUIRE(peer->read_line() == std::optional<std::string>{"CALLED"});
  BOOST_REQUIRE(wait_until([&] { return opened.load() == 1; }));
  peer->kill_hard();
  BOOST_REQUIRE(wait_until([&] { return cancelled.load() == 1; }));
  BOOST_TEST((*server)->open_streams() == 0u);
}

BOOST_AUTO_TEST_CASE(hostile_frames_to_the_server_are_counted_and_ignored) {
  auto server = make_zmq_request_server({"tcp://127.0.0.1:0", test_timing()});
  BOOST_REQUIRE(server);
  BOOST_REQUIRE((*server)->serve("dyn/worker/echo", [](bytes req, response_stream_ptr s) {
    (void)s->send(std::move(req));
    s->finish();
  }));
  raw_socket raw{zmq::socket_type::dealer};
  raw.sock.connect((*server)->address());
  bytes bad_version = header(rw::kind::request, 1);
  bad_version[0] = 9;
  raw.send({to_bytes("garbage")});                                             // 1: no header
  raw.send({bad_version, to_bytes("dyn/worker/echo"), to_bytes("x")});        // 2: version
  raw.send({header(rw::kind::request, 2), to_bytes("dyn/worker/echo")});      // 3: no payload
  raw.send({header(rw::kind::ping, 0), bytes(7, 0)});                         // 4: ragged ids
  raw.send({header(rw::kind::request, 0), to_bytes("dyn/worker/echo"), {}});  // 5: stream id 0
  raw.send({header(rw::kind::item, 3), to_bytes("x")});                       // 6: server kind
  raw.send(std::vector<bytes>(9, to_bytes("f")));                             // 7: 9 frames
  raw.send({header(rw::kind::request, 4), bytes(2000, 'p'), to_bytes("x")});  // 8: long path
  raw.send({header(rw::kind::request, 5), to_bytes("dyn/worker/echo"), to_bytes("fine")});
  auto item = raw.recv(); // frames are handled in order: all garbage came first
  BOOST_REQUIRE(item.size() == 2u);
  BOOST_TEST(header_of(item[0])->stream_id == 5u);
  BOOST_TEST(item[1].to_string() == "fine");
  auto end = raw.recv();
  BOOST_TEST(static_cast<int>(header_of(end[0])->kind) == static_cast<int>(rw::kind::end));
  BOOST_TEST((*server)->malformed_count() == 8u);
}

BOOST_AUTO_TEST_CASE(hostile_frames_to_the_client_are_counted_and_ignored) {
  raw_socket router{zmq::socket_type::router};
  router.sock.bind("tcp://127.0.0.1:0");
  auto client = make_zmq_request_client({test_timing()});
  call_recorder rec;
  (void)client->call(router.sock.get(zmq::sockopt::last_endpoint), "dyn/worker/generate",
                     to_bytes("x"), rec.on_item(), rec.on_end());
  auto req = router.recv();
  BOOST_REQUIRE(req.size() == 4u);
  bytes who{req[0].data<uint8_t>(), req[0].data<uint8_t>() + req[0].size()};
  auto id = header_of(req[1])->stream_id;
  router.send({who, to_bytes("junk")});                           // 1: no header
  router.send({who, header(rw::kind::request, id)});              // 2: client kind
  router.send({who, header(rw::kind::item, id)});                 // 3: no payload
  router.send({who, header(rw::kind::error, id), {}});            // 4: empty error body
  router.send({who, header(rw::kind::pong, 0), bytes(5, 1)});     // 5: ragged ids
  router.send({who, header(rw::kind::item, id), to_bytes("ok")});
  router.send({who, header(rw::kind::end, id)});
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(!rec.error());
  BOOST_TEST(rec.items() == std::vector<std::string>{"ok"});
  BOOST_TEST(client->malformed_count() == 5u);
}

BOOST_AUTO_TEST_CASE(a_server_that_stops_answering_pings_is_declared_gone) {
  raw_socket router{zmq::socket_type::router}; // accepts the call, then never answers
  router.sock.bind("tcp://127.0.0.1:0");
  auto client = make_zmq_request_client({test_timing()});
  call_recorder rec;
  (void)client->call(router.sock.get(zmq::sockopt::last_endpoint), "dyn/worker/generate",
                     to_bytes("x"), rec.on_item(), rec.on_end());
  BOOST_REQUIRE(router.recv().size() == 4u);
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code_of(rec.error()) == errc::disconnected);
  BOOST_TEST(message_of(rec.error()).find("silent") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_stream_the_server_reports_unknown_fails_as_disconnected) {
  raw_socket router{zmq::socket_type::router};
  router.sock.bind("tcp://127.0.0.1:0");
  auto client = make_zmq_request_client({test_timing()});
  call_recorder rec;
  (void)client->call(router.sock.get(zmq::sockopt::last_endpoint), "dyn/worker/generate",
                     to_bytes("x"), rec.on_item(), rec.on_end());
  auto req = router.recv();
  bytes who{req[0].data<uint8_t>(), req[0].data<uint8_t>() + req[0].size()};
  auto id = header_of(req[1])->stream_id;
  auto ping = router.recv();
  BOOST_REQUIRE(static_cast<int>(header_of(ping[1])->kind) == static_cast<int>(rw::kind::ping));
  auto listed = rw::decode_ids({ping[2].data<uint8_t>(), ping[2].size()});
  BOOST_TEST(*listed == std::vector<uint64_t>{id}); // pings carry the open stream ids
  std::vector<uint64_t> unknown{id};
  router.send({who, header(rw::kind::pong, 0), rw::encode_ids(unknown)});
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code_of(rec.error()) == errc::disconnected);
}

BOOST_AUTO_TEST_CASE(server_cancels_streams_a_ping_no_longer_lists) {
  std::atomic<int> cancelled{0}; // declared before the server: it outlives them
  std::vector<response_stream_ptr> held;
  auto server = make_zmq_request_server({"tcp://127.0.0.1:0", test_timing()});
  BOOST_REQUIRE(server);
  BOOST_REQUIRE((*server)->serve("dyn/worker/generate", [&](bytes, response_stream_ptr s) {
    s->on_cancel([&] { ++cancelled; });
    held.push_back(std::move(s)); // I/O thread only
  }));
  raw_socket raw{zmq::socket_type::dealer};
  raw.sock.connect((*server)->address());
  raw.send({header(rw::kind::request, 9), to_bytes("dyn/worker/generate"), to_bytes("x")});
  std::vector<uint64_t> listed{9, 77};
  raw.send({header(rw::kind::ping, 0), rw::encode_ids(listed)});
  auto pong = raw.recv();
  BOOST_TEST(*rw::decode_ids({pong[1].data<uint8_t>(), pong[1].size()}) ==
             std::vector<uint64_t>{77});
  BOOST_TEST(cancelled.load() == 0);
  raw.send({header(rw::kind::ping, 0), rw::encode_ids(std::vector<uint64_t>{})});
  (void)raw.recv();
  BOOST_TEST(cancelled.load() == 1); // stream 9 was orphaned (its cancel "lost")
}

BOOST_AUTO_TEST_CASE(binding_an_address_in_use_is_an_io_error) {
  auto first = make_zmq_request_server({"tcp://127.0.0.1:0", test_timing()});
  BOOST_REQUIRE(first);
  auto second = make_zmq_request_server({(*first)->address(), test_timing()});
  BOOST_REQUIRE(!second);
  BOOST_TEST(code_of(second.error()) == errc::io_error);
}

BOOST_AUTO_TEST_CASE(a_wildcard_bind_advertises_the_given_host) {
  zmq_request_server_options o{"tcp://0.0.0.0:0", test_timing()};
  o.advertise_host = "127.0.0.1";
  auto server = make_zmq_request_server(o);
  BOOST_REQUIRE(server);
  const std::string addr = (*server)->address();
  BOOST_TEST(addr.starts_with("tcp://127.0.0.1:"), addr);
  BOOST_TEST(addr != "tcp://127.0.0.1:0");
  BOOST_REQUIRE((*server)->serve("dyn/worker/echo", [](bytes req, response_stream_ptr s) {
    (void)s->send(std::move(req));
    s->finish();
  }));
  auto client = make_zmq_request_client({test_timing()});
  call_recorder rec;
  (void)client->call(addr, "dyn/worker/echo", to_bytes("advertised"), rec.on_item(), rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(!rec.error());
  BOOST_TEST(rec.items() == std::vector<std::string>{"advertised"});
}

BOOST_AUTO_TEST_CASE(ipc_transport_round_trips) {
  temp_dir dir;
  auto server = make_zmq_request_server({"ipc://" + dir.path() + "/rq.sock", test_timing()});
  BOOST_REQUIRE(server);
  BOOST_TEST((*server)->address() == "ipc://" + dir.path() + "/rq.sock");
  BOOST_REQUIRE((*server)->serve("dyn/worker/echo", [](bytes req, response_stream_ptr s) {
    (void)s->send(std::move(req));
    s->finish();
  }));
  auto client = make_zmq_request_client({test_timing()});
  call_recorder rec;
  (void)client->call((*server)->address(), "dyn/worker/echo", to_bytes("via ipc"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(!rec.error());
  BOOST_TEST(rec.items() == std::vector<std::string>{"via ipc"});
}

BOOST_AUTO_TEST_SUITE_END()
