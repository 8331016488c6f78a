// KV cache events and worker load metrics: what workers publish on the event
// plane and the router consumes (research/dynamo.md 3.2). Hashes are the ones
// of runtime/kv/block_hash.hpp: `block_hash` is the engine's sequence hash,
// `tokens_hash` the local hash of the block's tokens. Plain values.
#pragma once

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace dynamo::protocol {

/// Event-plane topics: a worker's KV events (router_event) and its load (load_metrics).
inline constexpr std::string_view kv_events_topic = "kv-events";
inline constexpr std::string_view load_metrics_topic = "kv_metrics";

/// Discovery metadata of a worker whose engine publishes vLLM-format KV events
/// on ZeroMQ (vLLM's or SGLang's ZmqEventPublisher) instead of the event plane:
/// its PUB endpoint, optionally its replay ROUTER endpoint, the topic and the
/// data-parallel rank of that stream (default 0). Routers relay them (vllm_kv_relay).
inline constexpr std::string_view zmq_kv_events_key = "zmq_kv_events";
inline constexpr std::string_view zmq_kv_replay_key = "zmq_kv_replay";
inline constexpr std::string_view zmq_kv_topic_key = "zmq_kv_topic";
inline constexpr std::string_view zmq_kv_dp_rank_key = "zmq_kv_dp_rank";

enum class kv_event_kind : uint8_t { stored = 0, removed = 1, cleared = 2 };

[[nodiscard]] std::string_view to_string(kv_event_kind k) noexcept;

/// Where the blocks of an event live (Dynamo's storage tier; vLLM's `medium`):
/// device is the engine's own KV (G1), host_pinned and disk the KV block
/// manager's G2 and G3 (runtime/kvbm), external anything beyond.
enum class storage_tier : uint8_t { device = 0, host_pinned = 1, disk = 2, external = 3 };

/// vLLM's medium name: GPU, CPU, DISK, EXTERNAL.
[[nodiscard]] std::string_view to_string(storage_tier t) noexcept;

struct kv_stored_block {
  uint64_t block_hash = 0;  ///< engine (sequence) hash; opaque to the router
  uint64_t tokens_hash = 0; ///< local hash of the block's tokens
  DYNAMO_MSGPACK_MAP(block_hash, tokens_hash);
};

/// One KV cache event of one worker.
struct kv_event {
  uint64_t event_id = 0;  ///< monotonic per (worker, dp_rank); gaps trigger recovery
  kv_event_kind kind = kv_event_kind::stored;
  std::optional<uint64_t> parent_hash;  ///< stored: sequence hash of the parent block
  std::vector<kv_stored_block> blocks;  ///< stored: consecutive blocks, root-most first
  std::vector<uint64_t> removed_hashes; ///< removed: block (sequence) hashes
  uint32_t dp_rank = 0;
  /// The tier the stored / removed blocks are in (absent on the wire: device).
  storage_tier medium = storage_tier::device;
  DYNAMO_MSGPACK_MAP(event_id, kind, parent_hash, blocks, removed_hashes, dp_rank, medium);
};

/// A kv_event tagged with its worker, as the router indexes it.
struct router_event {
  uint64_t worker_id = 0;
  kv_event event;
  DYNAMO_MSGPACK_MAP(worker_id, event);
};

/// A worker's KV block manager, as Dynamo names its metrics (research/dynamo.md
/// 5): counters since the engine started, and hit rates over blocks looked up
/// past the device prefix at admission.
struct kvbm_metrics {
  uint64_t kvbm_matched_tokens = 0;
  uint64_t kvbm_offload_blocks_d2h = 0; ///< device -> host
  uint64_t kvbm_offload_blocks_h2d = 0; ///< host -> disk
  uint64_t kvbm_onboard_blocks_h2d = 0; ///< host -> device
  uint64_t kvbm_onboard_blocks_d2d = 0; ///< disk -> device
  double kvbm_host_cache_hit_rate = 0.0;
  double kvbm_disk_cache_hit_rate = 0.0;
  DYNAMO_MSGPACK_MAP(kvbm_matched_tokens, kvbm_offload_blocks_d2h, kvbm_offload_blocks_h2d, kvbm_onboard_blocks_h2d,
                     kvbm_onboard_blocks_d2d, kvbm_host_cache_hit_rate, kvbm_disk_cache_hit_rate);
};

/// Periodic load report of one worker (topic "kv_metrics").
struct load_metrics {
  uint64_t worker_id = 0;
  uint32_t dp_rank = 0;
  uint32_t active_decode_blocks = 0; ///< KV blocks held by running requests
  uint32_t total_blocks = 0;         ///< KV blocks in the pool
  uint32_t active_prefill_tokens = 0;///< prompt tokens scheduled but not yet computed
  uint32_t num_running = 0;
  uint32_t num_waiting = 0;
  float kv_usage = 0.0f;             ///< active_decode_blocks / total_blocks
  std::optional<kvbm_metrics> kvbm;  ///< when the worker runs the KV block manager
  DYNAMO_MSGPACK_MAP(worker_id, dp_rank, active_decode_blocks, total_blocks,
                     active_prefill_tokens, num_running, num_waiting, kv_usage, kvbm);
};

} // namespace dynamo::protocol

MSGPACK_ADD_ENUM(dynamo::protocol::kv_event_kind);
MSGPACK_ADD_ENUM(dynamo::protocol::storage_tier);
