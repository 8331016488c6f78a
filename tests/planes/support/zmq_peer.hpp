// A raw ZeroMQ socket in a context of its own, with a monitor that reports
// whether its handshake succeeded or failed: the peer that holds no (or other)
// CURVE keys in the plane security tests; and a raw TCP peer speaking ZMTP 1.0.
// Test thread only.
#pragma once

#include "runtime/core/secret.hpp"

#include <boost/test/unit_test.hpp>

#include <zmq.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
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

/// The port of a "tcp://host:port" address.
inline uint16_t port_of(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

/// A TCP connection to 127.0.0.1:`port` (its fd; the caller closes it).
inline int connect_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  BOOST_REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  return fd;
}

/// Connects to 127.0.0.1:`port`, sends bytes without a ZMTP 3 signature (a
/// ZMTP 1.0 peer to libzmq) and reads until the server closes: true when
/// it does within the deadline.
inline bool zmtp1_peer_is_cut_off(uint16_t port) {
  int fd = connect_loopback(port);
  timeval tv{10, 0}; // bounds a failing test only
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string v1{"\x05\x00" "abcd\x03\x00xyz", 10};
  (void)::send(fd, v1.data(), v1.size(), MSG_NOSIGNAL);
  char buf[256];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
  }
  bool closed = n == 0 || (n < 0 && errno == ECONNRESET);
  ::close(fd);
  return closed;
}

} // namespace dynamo::planes::testing
