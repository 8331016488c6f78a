// ZeroMQ-only event plane behaviour: hostile publishers and bind errors.
#include "planes/event/envelope.hpp"

#include "event_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <zmq.hpp>

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
}

BOOST_AUTO_TEST_CASE(connecting_to_a_bad_address_is_invalid_argument) {
  zmq_event_subscriber_options o;
  auto sub = make_zmq_event_subscriber(o);
  BOOST_TEST(code_of(sub->connect("nonsense://x").error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
