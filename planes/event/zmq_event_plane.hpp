// Factories of the ZeroMQ event plane: a PUB socket that binds (HWM 100000 as
// Dynamo; a full queue drops, which subscribers see as gaps; a reaper thread
// frees disconnected peers) and a SUB socket that connects to any number of
// publishers. Multipart [topic, envelope].
// Called by apps/actors that wire a process; this header does not include zmq.hpp.
#pragma once

#include "planes/event/event_plane.hpp"
#include "runtime/core/secret.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace dynamo::planes {

struct zmq_event_publisher_options {
  std::string bind_address = "tcp://127.0.0.1:0"; ///< port 0 (or *) picks a free one
  uint64_t publisher_id = 0;                      ///< 0: a random id
  int send_hwm = 100000; ///< messages queued per subscriber; 0 (unbounded) risks memory
  size_t max_message_bytes = default_max_message_bytes;
  std::string advertise_host; ///< the host address() names ("": the bound one; see dynamo::with_host)
  /// How often the socket is made to free the state of peers that went away
  /// (libzmq does it only when the socket is used; an idle publisher never would).
  std::chrono::milliseconds reap_interval{100};
  /// Set: a CURVE server admitting only subscribers that hold these keys
  /// (planes/codec/zmq_curve.hpp); unset: open (ZeroMQ's NULL mechanism).
  std::optional<curve_keypair> curve;
};

struct zmq_event_subscriber_options {
  event_subscriber_callbacks callbacks;
  int receive_hwm = 100000;
  size_t max_message_bytes = default_max_message_bytes;
  std::chrono::milliseconds tick{100};
  /// Set: every connection is a CURVE client with these keys; a publisher
  /// without them (or without CURVE) is never heard.
  std::optional<curve_keypair> curve;
};

/// errc::io_error when the bind fails; errc::invalid_argument for send_hwm < 0 or
/// reap_interval <= 0; errc::config_error for CURVE keys that do not match.
[[nodiscard]] expected<std::unique_ptr<event_publisher>>
make_zmq_event_publisher(zmq_event_publisher_options options = {});

/// A subscriber whose CURVE keys do not match fails every connect() with errc::config_error.
[[nodiscard]] std::unique_ptr<event_subscriber>
make_zmq_event_subscriber(zmq_event_subscriber_options options);

} // namespace dynamo::planes
