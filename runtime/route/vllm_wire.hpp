// vLLM's ZMQ KV-event wire format (research/dynamo.md 3.3) and its conversion
// into router events. Called by the relay (vllm_relay) that subscribes to a
// vLLM or SGLang engine. Decoding is pure and never trusts the bytes (error values, bounded
// unpack); a vllm_event_converter belongs to one relay (not thread-safe).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/kv_event.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::route {

// A message is three frames: topic, 8-byte big-endian sequence, msgpack payload.
// The payload is msgspec's array_like [ts, [events...], dp_rank] or its default
// map {"ts", "events", "data_parallel_rank"}; each event is a tagged array
// ["BlockStored", ...] or a map {"type": "BlockStored", ...}.

using protocol::storage_tier;

/// vLLM `medium` -> tier: GPU|DEVICE -> device, CPU_PINNED|CPU_TIER1 -> host,
/// CPU_TIER2|DISK|NVME -> disk, EXTERNAL|NETWORK|REMOTE|SHARED -> external;
/// absent or unknown -> device (case-insensitive).
[[nodiscard]] storage_tier tier_of_medium(std::optional<std::string_view> medium) noexcept;

enum class vllm_event_kind : uint8_t { block_stored, block_removed, all_blocks_cleared, ignored };

/// One decoded engine event. Fields not used by a kind stay empty.
struct vllm_event {
  vllm_event_kind kind = vllm_event_kind::ignored;
  std::vector<uint64_t> block_hashes;       ///< signed hashes reinterpreted bitwise
  std::optional<uint64_t> parent_block_hash;
  std::vector<uint32_t> token_ids;          ///< bigrams flattened: firsts + last second
  bool bigram = false;                      ///< EAGLE: hash windows of block_size + 1
  uint64_t block_size = 0;
  std::optional<std::string> medium;
  std::optional<std::string> lora_name;
  std::vector<std::vector<uint64_t>> mm_hashes; ///< per block, from extra_keys
};

struct vllm_event_batch {
  double ts = 0.0;
  std::vector<vllm_event> events;
  std::optional<int64_t> dp_rank;
};

struct vllm_message {
  std::string topic;
  uint64_t sequence = 0; ///< the engine's per-publisher sequence number
  vllm_event_batch batch;
};

/// Decodes the msgpack payload frame.
[[nodiscard]] expected<vllm_event_batch> decode_vllm_payload(std::span<const uint8_t> payload);

/// Decodes a whole message; anything but exactly three frames, or a sequence
/// frame that is not 8 bytes, is errc::malformed_message.
[[nodiscard]] expected<vllm_message>
decode_vllm_frames(std::span<const std::span<const uint8_t>> frames);

/// The router's tokens_hash of one block: XXH3-64 of the LE u32 tokens, then
/// the block's multimodal hashes (LE u64, ascending), seeded with 1337, or with
/// 1337 + XXH3-64(lora_name, 0) for a LoRA adapter (research/dynamo.md 3.1).
[[nodiscard]] uint64_t tokens_hash_of(std::span<const uint32_t> tokens,
                                      std::string_view lora_name = {},
                                      std::span<const uint64_t> mm_hashes = {});

/// Turns decoded batches of one engine into router events with fresh,
/// consecutive event ids and router-computed tokens hashes. Events on other
/// tiers than the device are skipped (no id consumed). A stored block whose
/// size is not `kv_block_size`, or whose tokens are missing, ends its event's
/// block list (warned three times at most). A stored event repeating a hash
/// (or its parent) becomes an empty removal: a no-op that keeps ids dense.
class vllm_event_converter {
public:
  vllm_event_converter(uint64_t worker_id, uint32_t kv_block_size, uint64_t first_event_id = 0);

  [[nodiscard]] std::vector<protocol::router_event> convert(const vllm_event_batch& batch);

  [[nodiscard]] uint64_t next_event_id() const noexcept { return next_id_; }
  [[nodiscard]] uint64_t skipped_off_device() const noexcept { return skipped_off_device_; }
  [[nodiscard]] uint64_t truncated_events() const noexcept { return truncated_; }
  [[nodiscard]] uint64_t self_referencing_events() const noexcept { return self_referencing_; }

private:
  [[nodiscard]] protocol::kv_event convert_stored(const vllm_event& ev);

  uint64_t worker_id_;
  uint32_t kv_block_size_;
  uint64_t next_id_;
  uint64_t skipped_off_device_ = 0;
  uint64_t truncated_ = 0;
  uint64_t self_referencing_ = 0;
};

} // namespace dynamo::route
