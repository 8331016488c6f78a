// The in-process fake of the event plane (same contract, no sockets): publishers
// get an "inproc-fake://event/N" address on a shared bus; each subscriber has its
// own executor thread. Unlike ZeroMQ, connect/subscribe act as they return and
// nothing is dropped (gaps come only from skip_sequences). Thread-safe.
#pragma once

#include "planes/event/event_plane.hpp"

#include <memory>

namespace dynamo::planes {

/// The address book fake publishers and subscribers share.
class inproc_event_bus;

[[nodiscard]] std::shared_ptr<inproc_event_bus> make_inproc_event_bus();

/// `publisher_id` 0: a random id.
[[nodiscard]] std::unique_ptr<event_publisher>
make_inproc_event_publisher(std::shared_ptr<inproc_event_bus> bus, uint64_t publisher_id = 0,
                            size_t max_message_bytes = default_max_message_bytes);

[[nodiscard]] std::unique_ptr<event_subscriber>
make_inproc_event_subscriber(std::shared_ptr<inproc_event_bus> bus,
                             event_subscriber_callbacks callbacks);

} // namespace dynamo::planes
