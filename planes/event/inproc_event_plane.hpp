// The in-process fake of the event plane: same contract as the ZeroMQ one
// (event_plane.hpp), no sockets. Publishers get an "inproc-fake://event/N"
// address on a shared bus; subscribers connect by address and receive on their
// own executor thread. Unlike ZeroMQ, a connect/subscribe is in effect as soon
// as it returns and nothing is dropped (gaps appear only via skip_sequences).
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
