// The request plane with CURVE (docs/CLUSTER.md "Security"): only clients
// holding the cluster keys are served, and clients reach only servers that
// hold them (a fake worker without the secret key receives nothing).
#include "planes/codec/zmq_curve.hpp"
#include "planes/request/request_wire.hpp"
#include "planes/request/zmq_request_plane.hpp"

#include "../support/support.hpp"
#include "../support/zmq_peer.hpp"
#include "request_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
namespace rw = dynamo::planes::request_wire;

namespace {

curve_keypair new_keys() {
  auto k = generate_curve_keypair();
  BOOST_REQUIRE(k);
  return *k;
}

struct echo_server {
  std::atomic<int> served{0};
  std::unique_ptr<request_server> server;
  explicit echo_server(std::optional<curve_keypair> keys) {
    zmq_request_server_options o{"tcp://127.0.0.1:0", test_timing()};
    o.curve = std::move(keys);
    auto s = make_zmq_request_server(o);
    BOOST_REQUIRE_MESSAGE(s, (s ? "" : describe(s.error())));
    server = std::move(*s);
    BOOST_REQUIRE(server->serve("dyn/worker/echo", [this](bytes req, response_stream_ptr st) {
      ++served;
      (void)st->send(std::move(req));
      st->finish();
    }));
  }
};

std::unique_ptr<request_client> client_with(std::optional<curve_keypair> keys) {
  zmq_request_client_options o{test_timing()};
  o.curve = std::move(keys);
  return make_zmq_request_client(o);
}

/// The end of one echo call ("" when it finished cleanly with the echo).
errc call_echo(request_client& client, const std::string& address) {
  call_recorder rec;
  (void)client.call(address, "dyn/worker/echo", to_bytes("hi"), rec.on_item(), rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  if (!rec.error())
    BOOST_TEST(rec.items() == std::vector<std::string>{"hi"});
  return rec.error() ? code_of(rec.error()) : errc{};
}

} // namespace

BOOST_AUTO_TEST_SUITE(request_plane_curve)

BOOST_AUTO_TEST_CASE(a_client_with_the_keys_is_served) {
  auto keys = new_keys();
  echo_server srv{keys};
  auto client = client_with(keys);
  BOOST_TEST(static_cast<int>(call_echo(*client, srv.server->address())) == 0);
  BOOST_TEST(srv.served == 1);
}

BOOST_AUTO_TEST_CASE(clients_without_the_keys_are_refused) {
  auto keys = new_keys();
  echo_server srv{keys};
  auto plain = client_with(std::nullopt);
  BOOST_TEST(static_cast<int>(call_echo(*plain, srv.server->address())) ==
             static_cast<int>(errc::disconnected));
  auto stranger = client_with(new_keys()); // CURVE, other cluster
  BOOST_TEST(static_cast<int>(call_echo(*stranger, srv.server->address())) ==
             static_cast<int>(errc::disconnected));

  // A raw DEALER that knows the server's public key but holds other keys: ZAP
  // refuses it, and a request it queues is never delivered.
  zmq_peer raw{zmq::socket_type::dealer};
  raw.curve_client(keys.public_key, new_keys());
  raw.sock.connect(srv.server->address());
  BOOST_TEST(raw.next_handshake_event() == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
  auto h = rw::encode_header(rw::kind::request, 1);
  (void)raw.sock.send(zmq::buffer(h), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  (void)raw.sock.send(zmq::buffer(std::string{"dyn/worker/echo"}), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  (void)raw.sock.send(zmq::buffer(std::string{"x"}), zmq::send_flags::dontwait);

  auto member = client_with(keys);
  BOOST_TEST(static_cast<int>(call_echo(*member, srv.server->address())) == 0);
  BOOST_TEST(srv.served == 1); // only the member's call
}

BOOST_AUTO_TEST_CASE(a_server_without_the_keys_receives_nothing) {
  auto keys = new_keys();
  echo_server plain{std::nullopt};
  echo_server impostor{new_keys()};
  auto client = client_with(keys);
  BOOST_TEST(static_cast<int>(call_echo(*client, plain.server->address())) ==
             static_cast<int>(errc::disconnected));
  BOOST_TEST(static_cast<int>(call_echo(*client, impostor.server->address())) ==
             static_cast<int>(errc::disconnected));
  BOOST_TEST(plain.served == 0);
  BOOST_TEST(impostor.served == 0);
}

// Without keys, peers older than ZMTP 3.0 are cut off too (null_server), and a
// plain server serves plain clients while a keyed server's ZAP handler, which
// answers for the whole context, runs beside it.
BOOST_AUTO_TEST_CASE(without_keys_zmtp1_peers_are_cut_off_and_plain_clients_served) {
  echo_server keyed{new_keys()};
  echo_server plain{std::nullopt};
  auto port = port_of(plain.server->address());
  for (int i = 0; i < 50; ++i)
    BOOST_REQUIRE(zmtp1_peer_is_cut_off(port));
  auto client = client_with(std::nullopt);
  BOOST_TEST(static_cast<int>(call_echo(*client, plain.server->address())) == 0);
  BOOST_TEST(plain.served == 1);
}

BOOST_AUTO_TEST_CASE(mismatched_keys_are_a_config_error) {
  zmq_request_server_options o;
  o.curve = curve_keypair{new_keys().public_key, new_keys().secret_key};
  auto s = make_zmq_request_server(o);
  BOOST_REQUIRE(!s);
  BOOST_TEST(static_cast<int>(code_of(s.error())) == static_cast<int>(errc::config_error));
  auto client = client_with(o.curve);
  BOOST_TEST(static_cast<int>(call_echo(*client, "tcp://127.0.0.1:1")) ==
             static_cast<int>(errc::config_error));
}

BOOST_AUTO_TEST_SUITE_END()
