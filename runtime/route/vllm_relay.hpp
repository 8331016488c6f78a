// The router-side relay of one external engine's vLLM-format KV-event stream:
// orders the engine's batches by their sequence number, detects gaps and asks
// for a replay (or, without a replay socket, clears the worker's blocks), and
// turns batches into router events that it also remembers to answer the
// router's resync requests. Driven by actors/router/vllm_kv_relay from the
// subscriber's I/O thread; pure and not thread-safe.
#pragma once

#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/vllm_wire.hpp"
#include "runtime/route/worker_event_buffer.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace dynamo::route {

struct vllm_relay_options {
  uint64_t worker_id = 0;     ///< the discovery instance the engine serves as
  uint32_t dp_rank = 0;       ///< the rank this stream carries; other ranks' batches are dropped
  uint32_t kv_block_size = 16;
  bool replay = false;        ///< the engine has a replay socket
  size_t max_held = 4096;     ///< live batches kept while a replay runs (more are dropped)

  [[nodiscard]] bool operator==(const vllm_relay_options&) const = default;
};

/// Counters of one relay (monotonic).
struct vllm_relay_stats {
  uint64_t batches = 0;      ///< batches applied (live or replayed)
  uint64_t events = 0;       ///< router events produced
  uint64_t malformed = 0;    ///< messages or replayed batches that did not decode
  uint64_t wrong_rank = 0;   ///< batches of another data-parallel rank
  uint64_t gaps = 0;         ///< sequence jumps on the live stream
  uint64_t replays = 0;      ///< replay requests made
  uint64_t replay_failures = 0; ///< replays that timed out or could not fill the gap
  uint64_t clears = 0;       ///< times the worker's blocks were dropped to stay correct
  uint64_t stale = 0;        ///< duplicates and batches older than the stream
  uint64_t restarts = 0;     ///< the sequence started again at 0 (a new engine)
  uint64_t overflow = 0;     ///< live batches dropped while too many were held
};

/// What the caller does after a step: feed `events` to the router in order,
/// then (when set) ask the replay socket for every batch from `replay_from` on.
struct vllm_relay_step {
  std::vector<protocol::router_event> events;
  std::optional<uint64_t> replay_from;
};

/// Sequencing rules (engine sequence numbers start at 0 per publisher):
/// - next expected: applied. Older: dropped (stale), except 0 after a higher
///   number, which is a restarted engine: its blocks are cleared first.
/// - a jump: counted as a gap. With a replay socket the batch is held and the
///   missing ones are requested; otherwise the worker's blocks are cleared and
///   the batch applied (the index may then miss blocks, but never holds one the
///   engine dropped).
/// - the first batch seen above 0 is a late join, not a gap: with a replay
///   socket everything the engine still buffers is requested first.
/// A replay that ends (or fails) without reaching the held batches clears the
/// worker's blocks before they are applied; only one replay runs at a time.
class vllm_relay {
public:
  explicit vllm_relay(vllm_relay_options options);

  /// One live message: three frames [topic, 8-byte BE sequence, msgpack batch].
  [[nodiscard]] vllm_relay_step on_message(std::span<const std::span<const uint8_t>> frames);
  /// One batch of the replay in progress (ignored when none is).
  [[nodiscard]] vllm_relay_step on_replay_batch(uint64_t sequence,
                                                std::span<const uint8_t> payload);
  /// The replay's end marker (`complete`), or its failure or timeout.
  [[nodiscard]] vllm_relay_step on_replay_end(bool complete);

  /// The answer to a router's resync request for this worker: the range from
  /// the ring of recent router events, or a dump of every block it holds.
  [[nodiscard]] protocol::kv_replay answer(const protocol::kv_resync_request& request) const;

  [[nodiscard]] bool replaying() const noexcept { return replaying_; }
  [[nodiscard]] std::optional<uint64_t> next_sequence() const noexcept { return next_seq_; }
  [[nodiscard]] const vllm_relay_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const vllm_relay_options& options() const noexcept { return opts_; }

private:
  struct held_batch {
    uint64_t sequence;
    vllm_event_batch batch;
  };

  void apply(uint64_t sequence, vllm_event_batch batch, vllm_relay_step& out);
  void clear(vllm_relay_step& out);
  void emit(std::vector<protocol::router_event> events, vllm_relay_step& out);
  void on_live(uint64_t sequence, vllm_event_batch batch, vllm_relay_step& out);
  void hold(uint64_t sequence, vllm_event_batch batch);
  [[nodiscard]] bool right_rank(const vllm_event_batch& batch);

  vllm_relay_options opts_;
  vllm_event_converter converter_;
  worker_event_buffer buffer_;
  vllm_relay_stats stats_;
  std::optional<uint64_t> next_seq_; ///< none until the first batch is applied
  bool replaying_ = false;
  std::deque<held_batch> held_;      ///< live batches that came during the replay
};

} // namespace dynamo::route
