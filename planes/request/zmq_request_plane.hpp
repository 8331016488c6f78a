// Factories of the ZeroMQ request plane: a ROUTER server and a client that
// multiplexes its calls over one DEALER per remote address. Wire format and
// liveness rules: planes/README.md. Called by apps/actors that wire a process.
// The objects are thread-safe; this header does not include zmq.hpp.
#pragma once

#include "planes/request/request_plane.hpp"
#include "runtime/core/secret.hpp"

#include <memory>
#include <optional>
#include <string>

namespace dynamo::planes {

struct zmq_request_server_options {
  /// "tcp://host:0" (or ":*") binds a free port; "ipc:///path" works too.
  std::string bind_address = "tcp://127.0.0.1:0";
  request_plane_timing timing;
  /// The host address() names instead of the bound one ("": the bound one);
  /// needed when binding a wildcard (dynamo::with_host).
  std::string advertise_host;
  /// Set: a CURVE server admitting only clients that hold these keys
  /// (planes/codec/zmq_curve.hpp); unset: open (ZeroMQ's NULL mechanism).
  std::optional<curve_keypair> curve;
};

struct zmq_request_client_options {
  request_plane_timing timing;
  /// Set: every connection is a CURVE client with these keys. A failed
  /// handshake (a server with other keys or none) fails the calls to that
  /// server with errc::disconnected; keys that do not match, with errc::config_error.
  std::optional<curve_keypair> curve;
};

/// Binds and starts the server. errc::io_error when the bind fails
/// (address in use, bad address); errc::config_error for CURVE keys that do not match.
[[nodiscard]] expected<std::unique_ptr<request_server>>
make_zmq_request_server(zmq_request_server_options options = {});

[[nodiscard]] std::unique_ptr<request_client>
make_zmq_request_client(zmq_request_client_options options = {});

} // namespace dynamo::planes
