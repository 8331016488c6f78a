// A raw ZeroMQ socket in a context of its own, with a monitor that reports
// whether its handshake succeeded or failed: the peer that holds no (or other)
// CURVE keys in the plane security tests. Test thread only.
#pragma once

#include "runtime/core/secret.hpp"

#include <boost/test/unit_test.hpp>

#include <zmq.hpp>

#include <cstring>
#include <string>

namespace dynamo::planes::testing {

struct zmq_peer {
  zmq::context_t ctx{1};
  zmq::socket_t sock;
  zmq::socket_t monitor{ctx, zmq::socket_type::pair};

  explicit zmq_peer(zmq::socket_type type) : sock(ctx, type) {
    sock.set(zmq::sockopt::linger, 0);
    static int n = 0;
    std::string endpoint = "inproc://zmq-peer-monitor-" + std::to_string(++n);
    BOOST_REQUIRE(zmq_socket_monitor(sock.handle(), endpoint.c_str(),
                                     ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                       ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                       ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.set(zmq::sockopt::rcvtimeo, 10000); // bounds a failing test only
    monitor.connect(endpoint);
  }
  ~zmq_peer() {
    zmq_socket_monitor(sock.handle(), nullptr, 0);
    monitor.close();
    sock.close();
  }

  /// CURVE client of a server with public key `server_key`, presenting `own`.
  void curve_client(const std::string& server_key, const curve_keypair& own) {
    sock.set(zmq::sockopt::curve_serverkey, server_key);
    sock.set(zmq::sockopt::curve_publickey, own.public_key);
    sock.set(zmq::sockopt::curve_secretkey, own.secret_key);
  }
  /// CURVE server with `own` and no ZAP handler in its context (admits anyone).
  void curve_server(const curve_keypair& own) {
    sock.set(zmq::sockopt::curve_server, 1);
    sock.set(zmq::sockopt::curve_secretkey, own.secret_key);
  }

  /// The next handshake event: ZMQ_EVENT_HANDSHAKE_SUCCEEDED or one of the
  /// failures; 0 when none came within the monitor's timeout.
  int next_handshake_event() {
    zmq::message_t event;
    if (!monitor.recv(event))
      return 0;
    uint16_t id = 0;
    std::memcpy(&id, event.data(), sizeof id);
    zmq::message_t address;
    (void)monitor.recv(address);
    return id;
  }
  /// True once a handshake failed (every failure kind counts).
  bool handshake_failed() {
    int ev = next_handshake_event();
    return ev != 0 && ev != ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
  }
};

} // namespace dynamo::planes::testing
