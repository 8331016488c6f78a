// The subscriber side of a vLLM-format KV-event publisher (vLLM's or SGLang's
// ZmqEventPublisher): a SUB socket on its PUB endpoint and, when it has one, a
// DEALER on its replay ROUTER. Transport only: frames reach the callbacks on the
// source's I/O thread (runtime/route/vllm_wire decodes them). Created by
// actors/router/vllm_kv_relay; every method is thread-safe; callbacks must not block.
#pragma once

#include "planes/codec/wire.hpp"
#include "runtime/core/error.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace dynamo::planes {

/// Wire: live messages are [topic, sequence u64 BE, msgpack batch]. A replay
/// request is [sequence u64 BE] (behind DEALER's empty delimiter); the
/// publisher answers [sequence, batch] for every batch it still buffers from
/// that sequence on, then [0xffffffffffffffff, ""] (its end marker).
struct vllm_source_callbacks {
  /// Every live message, frames as received (the relay checks their count).
  std::function<void(std::span<const std::span<const uint8_t>> frames)> on_message;
  /// One batch of the replay in progress.
  std::function<void(uint64_t sequence, std::span<const uint8_t> payload)> on_replay_batch;
  /// The replay ended with the end marker (true) or timed out (false).
  std::function<void(bool complete)> on_replay_end;
};

struct zmq_vllm_source_options {
  std::string endpoint;        ///< the publisher's PUB address, e.g. tcp://host:5557
  std::string replay_endpoint; ///< its replay ROUTER ("": none)
  std::string topic;           ///< subscription prefix ("": every topic)
  /// A replay that sends nothing for this long is abandoned (its late answers dropped).
  std::chrono::milliseconds replay_timeout{2000};
  int receive_hwm = 100000;
  size_t max_message_bytes = default_max_message_bytes;
  vllm_source_callbacks callbacks;
};

struct vllm_source_stats {
  uint64_t received = 0;        ///< live messages handed to on_message
  uint64_t malformed = 0;       ///< messages dropped here (too many frames, bad replay frames)
  uint64_t replays = 0;         ///< replay requests sent
  uint64_t replay_timeouts = 0;
};

class vllm_event_source {
public:
  virtual ~vllm_event_source() = default;
  /// Asks the replay socket for every batch from `from_sequence` on; a replay
  /// in progress is abandoned. errc::invalid_argument without a replay endpoint.
  [[nodiscard]] virtual expected<void> request_replay(uint64_t from_sequence) = 0;
  [[nodiscard]] virtual vllm_source_stats stats() const = 0;
};

/// errc::invalid_argument when an endpoint is rejected by ZeroMQ.
[[nodiscard]] expected<std::unique_ptr<vllm_event_source>>
make_zmq_vllm_source(zmq_vllm_source_options options);

} // namespace dynamo::planes
