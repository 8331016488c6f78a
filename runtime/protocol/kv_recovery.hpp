// KV event recovery messages (research/dynamo.md 3.5): the router asks a worker
// for the events it missed, the worker answers from its ring buffer or with a
// full dump of its cached blocks. Produced and consumed by runtime/route
// (event_sequencer, worker_event_buffer). Plain values.
#pragma once

#include "runtime/protocol/kv_event.hpp"

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::protocol {

/// "Send me events [from_id, to_id] of (worker_id, dp_rank)" (inclusive).
struct kv_resync_request {
  uint64_t worker_id = 0;
  uint32_t dp_rank = 0;
  uint64_t from_id = 0;
  uint64_t to_id = 0;
  DYNAMO_MSGPACK_MAP(worker_id, dp_rank, from_id, to_id);
};

/// A worker's answer: the requested events, or (is_dump) stored events that
/// rebuild all its cached blocks, replacing what the router knew.
struct kv_replay {
  uint64_t worker_id = 0;
  uint32_t dp_rank = 0;
  bool is_dump = false;
  std::optional<uint64_t> last_event_id; ///< newest event the worker had recorded
  std::vector<kv_event> events;
  DYNAMO_MSGPACK_MAP(worker_id, dp_rank, is_dump, last_event_id, events);
};

/// Where a worker answers resync requests: "kv_resync" next to its generate
/// endpoint ("ns/component/generate" -> "ns/component/kv_resync").
[[nodiscard]] inline std::string kv_resync_endpoint(const std::string& generate_endpoint_path) {
  auto slash = generate_endpoint_path.rfind('/');
  return (slash == std::string::npos ? std::string{} : generate_endpoint_path.substr(0, slash + 1)) +
         "kv_resync";
}

} // namespace dynamo::protocol
