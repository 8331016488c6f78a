// The event plane's contract: topic pub/sub of msgpack envelopes numbered per
// (publisher, topic), with gap reports so consumers (the KV router) can re-sync.
// ZeroMQ (zmq_event_plane.hpp) and in-process (inproc_event_plane.hpp) versions.
// Every method is thread-safe; subscriber callbacks run on its I/O thread, must not block.
#pragma once

#include "planes/codec/wire.hpp"
#include "runtime/core/error.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dynamo::planes {

/// What travels on the plane (msgpack map on the wire, see planes/README.md).
struct event_envelope {
  uint64_t publisher_id = 0;  ///< random per publisher unless configured
  uint64_t sequence = 0;      ///< 1, 2, 3... per (publisher, topic)
  std::string topic;
  int64_t published_at_ms = 0; ///< publisher's wall clock
  bytes payload;               ///< itself msgpack (e.g. protocol::router_event)
};

/// Events between `expected` and `got` - 1 never arrived (or arrived before
/// this subscriber joined: the first event seen on a (publisher, topic) with a
/// sequence above 1 is reported as a gap from 1). A publisher restarted under
/// the same id shows as got = 1 after a higher sequence.
struct event_gap {
  uint64_t publisher_id = 0;
  std::string topic;
  uint64_t expected = 0;
  uint64_t got = 0;
};

using event_callback = std::function<void(const event_envelope&)>;
using gap_callback = std::function<void(const event_gap&)>;

/// Longest topic accepted.
inline constexpr size_t max_topic_bytes = 256;

class event_publisher {
public:
  virtual ~event_publisher() = default;
  /// Sends one event. errc::invalid_argument for an empty or over-long topic or
  /// an envelope over the size limit (no sequence number is used up then).
  /// Delivery is best effort: subscribers detect losses through gaps.
  [[nodiscard]] virtual expected<void> publish(std::string_view topic, bytes payload) = 0;
  /// The address subscribers connect to (port 0 resolved).
  [[nodiscard]] virtual std::string address() const = 0;
  [[nodiscard]] virtual uint64_t publisher_id() const = 0;
  /// Fault injection: the next `count` sequence numbers of `topic` are used up
  /// without sending anything (what a dropped message looks like downstream).
  virtual void skip_sequences(std::string_view topic, uint64_t count) = 0;
};

struct subscriber_stats {
  uint64_t received = 0;  ///< events delivered to on_event
  uint64_t malformed = 0; ///< messages dropped because they did not parse
  uint64_t gaps = 0;      ///< gaps reported to on_gap
  uint64_t stale = 0;     ///< duplicates / out-of-order events dropped
};

struct event_subscriber_callbacks {
  event_callback on_event;
  gap_callback on_gap; ///< runs before the on_event of the event that revealed the gap
};

class event_subscriber {
public:
  virtual ~event_subscriber() = default;
  /// Adds a publisher address. Idempotent. Events the publisher sends before the
  /// subscription reaches it are lost (slow joiner, see planes/README.md).
  /// errc::invalid_argument for an address the transport rejects.
  [[nodiscard]] virtual expected<void> connect(const std::string& address) = 0;
  /// Removes a publisher address; errc::not_found when not connected.
  [[nodiscard]] virtual expected<void> disconnect(const std::string& address) = 0;
  /// Receives topics starting with `prefix` ("" = all). Idempotent.
  [[nodiscard]] virtual expected<void> subscribe(const std::string& prefix) = 0;
  /// errc::not_found when not subscribed.
  [[nodiscard]] virtual expected<void> unsubscribe(const std::string& prefix) = 0;
  [[nodiscard]] virtual subscriber_stats stats() const = 0;
};

} // namespace dynamo::planes
