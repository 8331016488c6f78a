// The two request-plane implementations under one shape, so that every case of
// the contract suite runs against both: ZeroMQ on loopback and the in-process fake.
#pragma once

#include "planes/request/inproc_request_plane.hpp"
#include "planes/request/zmq_request_plane.hpp"

#include <boost/test/unit_test.hpp>

#include <tuple>

namespace dynamo::planes::testing {

/// Fast heartbeats so that liveness cases take about a second, not minutes.
inline request_plane_timing test_timing() {
  request_plane_timing t;
  t.heartbeat_interval = std::chrono::milliseconds{50};
  t.peer_timeout = std::chrono::milliseconds{1000};
  t.connect_timeout = std::chrono::milliseconds{3000};
  t.tick = std::chrono::milliseconds{20};
  return t;
}

struct zmq_backend {
  request_plane_timing timing = test_timing();
  std::unique_ptr<request_server> server() {
    auto s = make_zmq_request_server({"tcp://127.0.0.1:0", timing});
    BOOST_REQUIRE_MESSAGE(s, "bind failed");
    return std::move(*s);
  }
  std::unique_ptr<request_client> client() { return make_zmq_request_client({timing}); }
  std::string unreachable_address() { return "tcp://127.0.0.1:1"; } // nothing listens on port 1
};

struct fake_backend {
  std::shared_ptr<inproc_request_network> network = make_inproc_request_network();
  request_plane_timing timing = test_timing();
  std::unique_ptr<request_server> server() { return make_inproc_request_server(network, timing); }
  std::unique_ptr<request_client> client() { return make_inproc_request_client(network, timing); }
  std::string unreachable_address() { return "inproc-fake://request/999999"; }
};

using request_backends = std::tuple<zmq_backend, fake_backend>;

} // namespace dynamo::planes::testing
