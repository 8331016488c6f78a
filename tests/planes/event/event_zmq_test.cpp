// ZeroMQ-only event plane behaviour: hostile publishers and bind errors.
#include "planes/event/envelope.hpp"

#include "../support/zmq_peer.hpp"
#include "event_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <zmq.hpp>

#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// The sanitizers' allocator statistics (g++ ships no allocator_interface.h).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#define DYNAMO_TEST_SANITIZER_HEAP 1
#endif

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;

namespace {

struct raw_pub {
  zmq::context_t ctx{1};
  zmq::socket_t sock{ctx, zmq::socket_type::pub};
  raw_pub() {
    sock.set(zmq::sockopt::linger, 0);
    sock.bind("tcp://127.0.0.1:0");
  }
  std::string address() { return sock.get(zmq::sockopt::last_endpoint); }
  void send(std::vector<bytes> frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      (void)sock.send(zmq::buffer(frames[i]),
                      i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
};

bytes envelope(const std::string& topic, uint64_t seq) {
  return encode_envelope(event_envelope{7, seq, topic, 1, bytes{}});
}

/// Bytes the process's allocator has handed out and not taken back (exact,
/// unlike RSS, which keeps freed pages).
int64_t live_heap_bytes() {
#ifdef DYNAMO_TEST_SANITIZER_HEAP
  return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  auto m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#endif
}

/// Connects to 127.0.0.1:`port`, sends `n` bytes that are no ZMTP greeting, closes.
void send_garbage(uint16_t port, size_t n) {
  int fd = connect_loopback(port);
  // Bytes without a ZMTP 3 greeting, which libzmq takes for a ZMTP 1.0 peer:
  // the publisher refuses it (null_server) before the v1 path that could abort
  // it when such bytes came before the peer's session had its pipe (docs/FUZZING.md).
  std::vector<char> junk(n, '\x5a');
  (void)::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
  ::close(fd);
}

/// Connects to 127.0.0.1:`port` and speaks ZMTP 3.0 as a SUB (greeting, READY),
/// then sends the header of one `frame_bytes` message. True if the publisher
/// closes the connection before `deadline` (it never sends a SUB anything).
bool publisher_drops_a_frame_of(uint16_t port, uint64_t frame_bytes, std::chrono::seconds deadline) {
  int fd = connect_loopback(port);
  timeval tv{static_cast<time_t>(deadline.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out(64, '\0'); // greeting: signature, version 3.0, mechanism NULL, as-server 0
  out[0] = '\xff';
  out[9] = '\x7f';
  out[10] = 3;
  out.replace(12, 4, "NULL");
  std::string ready = std::string{"\x05READY"} + '\x0b' + "Socket-Type" + std::string{"\0\0\0\x03", 4} + "SUB";
  out += '\x04';
  out += static_cast<char>(ready.size());
  out += ready;
  out += '\x02'; // a long message frame, its 8-byte big-endian size, no body
  for (int shift = 56; shift >= 0; shift -= 8)
    out += static_cast<char>((frame_bytes >> shift) & 0xff);
  BOOST_REQUIRE(::send(fd, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size()));
  char buf[256];
  ssize_t got = 0;
  while ((got = ::recv(fd, buf, sizeof buf, 0)) > 0) {
  } // the publisher's greeting and READY, then its close (0) or our timeout (-1)
  ::close(fd);
  return got == 0;
}

/// Waits until the live heap is back within `slack` bytes of `baseline`.
bool heap_returns_to(int64_t baseline, int64_t slack) {
  int64_t last = 0;
  bool ok = wait_until([&] { return (last = live_heap_bytes()) - baseline < slack; }, 20s);
  BOOST_TEST_MESSAGE("live heap " << (last - baseline) << " bytes above the baseline");
  return ok;
}

} // namespace

BOOST_AUTO_TEST_SUITE(event_plane_zmq)

BOOST_AUTO_TEST_CASE(hostile_messages_are_counted_and_dropped) {
  raw_pub raw;
  event_recorder rec;
  zmq_event_subscriber_options o;
  o.callbacks = rec.callbacks();
  auto sub = make_zmq_event_subscriber(o);
  BOOST_REQUIRE(sub->connect(raw.address()));
  BOOST_REQUIRE(sub->subscribe(""));
  uint64_t probe = 0; // handshake with well-formed probes
  BOOST_REQUIRE(wait_until([&] {
    raw.send({to_bytes("probe"), envelope("probe", ++probe)});
    return !rec.events("probe").empty();
  }));
  raw.send({to_bytes("kv-events")});                                       // 1: one frame
  raw.send({to_bytes("kv-events"), bytes{0xc1, 0x00}});                    // 2: not msgpack
  raw.send({to_bytes("kv-events"), envelope("other", 1)});                 // 3: topic mismatch
  raw.send({to_bytes("kv-events"), envelope("kv-events", 1), bytes{1}});   // 4: three frames
  raw.send({to_bytes("kv-events"), envelope("kv-events", 0)});             // 5: sequence 0
  raw.send({to_bytes("kv-events"), bytes{0xdd, 0xff, 0xff, 0xff, 0xff}});  // 6: array32 bomb
  raw.send({to_bytes("kv-events"), envelope("kv-events", 1)});
  BOOST_REQUIRE(rec.wait_events("kv", 1));
  BOOST_TEST(sub->stats().malformed == 6u);
  BOOST_TEST(rec.events("kv").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_wildcard_bind_advertises_the_given_host) {
  zmq_event_publisher_options o;
  o.bind_address = "tcp://0.0.0.0:0";
  o.advertise_host = "127.0.0.1";
  auto pub = make_zmq_event_publisher(o);
  BOOST_REQUIRE(pub);
  BOOST_TEST((*pub)->address().starts_with("tcp://127.0.0.1:"), (*pub)->address());
  BOOST_TEST((*pub)->address() != "tcp://127.0.0.1:0");
}

BOOST_AUTO_TEST_CASE(binding_an_address_in_use_is_an_io_error) {
  auto first = make_zmq_event_publisher();
  BOOST_REQUIRE(first);
  zmq_event_publisher_options o;
  o.bind_address = (*first)->address();
  auto second = make_zmq_event_publisher(o);
  BOOST_REQUIRE(!second);
  BOOST_TEST(code_of(second.error()) == errc::io_error);
  o.send_hwm = -1;
  BOOST_TEST(code_of(make_zmq_event_publisher(o).error()) == errc::invalid_argument);
  o.send_hwm = 1;
  o.reap_interval = std::chrono::milliseconds{0};
  BOOST_TEST(code_of(make_zmq_event_publisher(o).error()) == errc::invalid_argument);
}

// Issue 18: libzmq frees a disconnected peer only when its socket is used, so
// an idle publisher kept every closed subscriber's pipe and subscriptions
// (~100 KB for 2,000 topics). Nothing is published after the subscribers
// close: only the reaper can give the memory back.
BOOST_AUTO_TEST_CASE(an_idle_publisher_frees_the_subscribers_that_left) {
  auto pub = make_zmq_event_publisher();
  BOOST_REQUIRE(pub);
  constexpr int peers = 20;
  constexpr int topics = 2000;
  auto baseline = live_heap_bytes();
  {
    zmq::context_t ctx{1};
    std::vector<zmq::socket_t> subs;
    for (int i = 0; i < peers; ++i) {
      auto& s = subs.emplace_back(ctx, zmq::socket_type::sub);
      s.set(zmq::sockopt::linger, 0);
      s.set(zmq::sockopt::rcvtimeo, 5);
      s.connect((*pub)->address());
      for (int t = 0; t < topics; ++t)
        s.set(zmq::sockopt::subscribe, "kv-events/" + std::to_string(t));
    }
    // Subscriptions arrive in order: the last topic reaching a peer means all did.
    for (auto& s : subs)
      BOOST_REQUIRE(wait_until([&] {
        BOOST_REQUIRE((*pub)->publish("kv-events/" + std::to_string(topics - 1), bytes{1}));
        zmq::message_t m;
        return s.recv(m).has_value();
      }));
    BOOST_TEST(live_heap_bytes() - baseline > int64_t{peers} * topics * 16); // they cost memory
  } // the subscribers close and their context terminates
  BOOST_TEST(heap_returns_to(baseline, 512 << 10));
}

// Connections that send bytes which are no ZMTP greeting and close.
BOOST_AUTO_TEST_CASE(garbage_connections_leave_nothing_behind) {
  auto pub = make_zmq_event_publisher();
  BOOST_REQUIRE(pub);
  auto port = port_of((*pub)->address());
  for (int i = 0; i < 50; ++i) // warm up the I/O thread's allocations
    send_garbage(port, 64);
  auto baseline = live_heap_bytes();
  for (int i = 0; i < 1000; ++i)
    send_garbage(port, 64 + i % 512);
  BOOST_TEST(heap_returns_to(baseline, 1 << 20));
}

// libzmq 4.3.4's ZMTP 1.0 path can abort a PUB (docs/FUZZING.md, "Findings"):
// a publisher without CURVE refuses such peers too (null_server) and still
// serves ZMTP 3 subscribers. Without it each peer is kept (a 10 s timeout here).
BOOST_AUTO_TEST_CASE(zmtp1_peers_are_cut_off_without_curve_too) {
  auto pub = make_zmq_event_publisher();
  BOOST_REQUIRE(pub);
  auto port = port_of((*pub)->address());
  for (int i = 0; i < 200; ++i)
    BOOST_REQUIRE(zmtp1_peer_is_cut_off(port));
  event_recorder rec;
  zmq_event_subscriber_options o;
  o.callbacks = rec.callbacks();
  auto sub = make_zmq_event_subscriber(std::move(o));
  BOOST_REQUIRE(sub->subscribe("probe"));
  BOOST_REQUIRE(sub->connect((*pub)->address()));
  BOOST_TEST(await_subscription(**pub, rec));
}

// A subscriber only sends subscriptions: a bigger frame is refused by its
// header (ZMQ_MAXMSGSIZE), before libzmq allocates the size it declares.
BOOST_AUTO_TEST_CASE(a_peer_announcing_a_huge_frame_is_disconnected) {
  auto pub = make_zmq_event_publisher();
  BOOST_REQUIRE(pub);
  BOOST_TEST(publisher_drops_a_frame_of(port_of((*pub)->address()), uint64_t{1} << 30, 5s));
}

BOOST_AUTO_TEST_CASE(connecting_to_a_bad_address_is_invalid_argument) {
  zmq_event_subscriber_options o;
  auto sub = make_zmq_event_subscriber(o);
  BOOST_TEST(code_of(sub->connect("nonsense://x").error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
