// The event plane with CURVE (docs/CLUSTER.md "Security"): subscribers and
// publishers without the cluster keys are refused, peers that speak ZMTP 1.0
// are cut off before libzmq's v1 path (docs/FUZZING.md, "Findings").
#include "planes/codec/zmq_curve.hpp"
#include "planes/event/envelope.hpp"

#include "../support/zmq_peer.hpp"
#include "event_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;

namespace {

curve_keypair new_keys() {
  auto k = generate_curve_keypair();
  BOOST_REQUIRE(k);
  return *k;
}

std::unique_ptr<event_publisher> keyed_publisher(const curve_keypair& keys) {
  zmq_event_publisher_options o;
  o.curve = keys;
  auto p = make_zmq_event_publisher(o);
  BOOST_REQUIRE_MESSAGE(p, (p ? "" : describe(p.error())));
  return std::move(*p);
}

std::unique_ptr<event_subscriber> keyed_subscriber(const curve_keypair& keys, event_recorder& rec) {
  zmq_event_subscriber_options o;
  o.callbacks = rec.callbacks();
  o.curve = keys;
  auto s = make_zmq_event_subscriber(std::move(o));
  BOOST_REQUIRE(s->subscribe("probe"));
  BOOST_REQUIRE(s->subscribe("kv"));
  return s;
}

void send_envelope(zmq::socket_t& pub, const std::string& topic) {
  auto env = encode_envelope(event_envelope{99, 1, topic, 1, bytes{}});
  (void)pub.send(zmq::buffer(topic), zmq::send_flags::sndmore);
  (void)pub.send(zmq::buffer(env), zmq::send_flags::none);
}

} // namespace

BOOST_AUTO_TEST_SUITE(event_plane_curve)

BOOST_AUTO_TEST_CASE(a_subscriber_with_the_keys_hears_and_one_without_gets_nothing) {
  auto keys = new_keys();
  auto pub = keyed_publisher(keys);
  event_recorder rec;
  auto sub = keyed_subscriber(keys, rec);
  BOOST_REQUIRE(sub->connect(pub->address()));
  BOOST_REQUIRE(await_subscription(*pub, rec));

  zmq_peer plain{zmq::socket_type::sub};
  plain.sock.set(zmq::sockopt::subscribe, "");
  plain.sock.connect(pub->address());
  BOOST_TEST(plain.handshake_failed());
  zmq_peer stranger{zmq::socket_type::sub}; // CURVE, knows the server key, holds other keys
  stranger.curve_client(keys.public_key, new_keys());
  stranger.sock.set(zmq::sockopt::subscribe, "");
  stranger.sock.connect(pub->address());
  BOOST_TEST(stranger.next_handshake_event() == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH); // ZAP said 400

  BOOST_REQUIRE(pub->publish("kv", bytes{1}));
  BOOST_REQUIRE(rec.wait_events("kv", 1));
  zmq::message_t m;
  BOOST_TEST(!plain.sock.recv(m, zmq::recv_flags::dontwait));
  BOOST_TEST(!stranger.sock.recv(m, zmq::recv_flags::dontwait));
}

BOOST_AUTO_TEST_CASE(a_publisher_without_the_keys_is_not_heard) {
  auto keys = new_keys();
  auto pub = keyed_publisher(keys);
  event_recorder rec;
  auto sub = keyed_subscriber(keys, rec);
  BOOST_REQUIRE(sub->connect(pub->address()));

  zmq_peer plain{zmq::socket_type::pub};
  plain.sock.bind("tcp://127.0.0.1:0");
  BOOST_REQUIRE(sub->connect(plain.sock.get(zmq::sockopt::last_endpoint)));
  zmq_peer impostor{zmq::socket_type::pub}; // CURVE with a keypair of its own
  impostor.curve_server(new_keys());
  impostor.sock.bind("tcp://127.0.0.1:0");
  BOOST_REQUIRE(sub->connect(impostor.sock.get(zmq::sockopt::last_endpoint)));
  BOOST_TEST(plain.handshake_failed());
  BOOST_TEST(impostor.handshake_failed());
  send_envelope(plain.sock, "kv");
  send_envelope(impostor.sock, "kv");

  BOOST_REQUIRE(await_subscription(*pub, rec));
  BOOST_REQUIRE(pub->publish("kv", bytes{1}));
  BOOST_REQUIRE(rec.wait_events("kv", 1));
  auto got = rec.events("kv");
  BOOST_TEST(got.size() == 1u);
  BOOST_TEST(got.front().publisher_id == pub->publisher_id());
}

BOOST_AUTO_TEST_CASE(a_subscriber_with_mismatched_keys_fails_to_connect) {
  event_recorder rec;
  zmq_event_subscriber_options o;
  o.callbacks = rec.callbacks();
  o.curve = curve_keypair{new_keys().public_key, new_keys().secret_key};
  auto sub = make_zmq_event_subscriber(std::move(o));
  auto c = sub->connect("tcp://127.0.0.1:1");
  BOOST_REQUIRE(!c);
  BOOST_TEST(static_cast<int>(code_of(c.error())) == static_cast<int>(errc::config_error));
  zmq_event_publisher_options po;
  po.curve = curve_keypair{new_keys().public_key, new_keys().secret_key};
  auto pub = make_zmq_event_publisher(po);
  BOOST_REQUIRE(!pub);
  BOOST_TEST(static_cast<int>(code_of(pub.error())) == static_cast<int>(errc::config_error));
}

// libzmq 4.3.4 refuses ZMTP 1.0 peers on a socket with a security mechanism
// (zmtp_engine: "reject ZMTP 1.0 connections if ZAP is enabled"), before the
// subscription injection that can abort a NULL-mechanism PUB.
BOOST_AUTO_TEST_CASE(zmtp1_peers_are_cut_off_by_a_curve_publisher) {
  auto keys = new_keys();
  auto pub = keyed_publisher(keys);
  auto port = port_of(pub->address());
  for (int i = 0; i < 200; ++i)
    BOOST_REQUIRE(zmtp1_peer_is_cut_off(port));
  event_recorder rec;
  auto sub = keyed_subscriber(keys, rec);
  BOOST_REQUIRE(sub->connect(pub->address()));
  BOOST_TEST(await_subscription(*pub, rec));
}

BOOST_AUTO_TEST_SUITE_END()
