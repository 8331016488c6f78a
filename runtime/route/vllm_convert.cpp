// vLLM events -> router events: storage tiers, router-side tokens hashes
// (with Dynamo's LoRA seed and multimodal suffix), fresh event ids.
#include "runtime/route/vllm_wire.hpp"

#include "runtime/kv/block_hash.hpp"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>

namespace dynamo::route {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
  });
}

void append_le(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

} // namespace

storage_tier tier_of_medium(std::optional<std::string_view> medium) noexcept {
  if (!medium)
    return storage_tier::device;
  for (std::string_view m : {"CPU_PINNED", "CPU_TIER1"})
    if (iequals(*medium, m))
      return storage_tier::host_pinned;
  for (std::string_view m : {"CPU_TIER2", "DISK", "NVME"})
    if (iequals(*medium, m))
      return storage_tier::disk;
  for (std::string_view m : {"EXTERNAL", "NETWORK", "REMOTE", "SHARED"})
    if (iequals(*medium, m))
      return storage_tier::external;
  return storage_tier::device; // GPU, DEVICE, and anything unknown
}

uint64_t tokens_hash_of(std::span<const uint32_t> tokens, std::string_view lora_name,
                        std::span<const uint64_t> mm_hashes) {
  if (lora_name.empty() && mm_hashes.empty())
    return kv::local_block_hash(tokens);
  uint64_t seed = kv::block_hash_seed;
  if (!lora_name.empty())
    seed += XXH3_64bits_withSeed(lora_name.data(), lora_name.size(), 0); // wrapping add
  std::vector<uint8_t> bytes;
  bytes.reserve(tokens.size() * 4 + mm_hashes.size() * 8);
  for (uint32_t t : tokens)
    append_le(bytes, t, 4);
  std::vector<uint64_t> mm(mm_hashes.begin(), mm_hashes.end());
  std::sort(mm.begin(), mm.end());
  for (uint64_t h : mm)
    append_le(bytes, h, 8);
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
}

vllm_event_converter::vllm_event_converter(uint64_t worker_id, uint32_t kv_block_size,
                                           uint64_t first_event_id)
    : worker_id_(worker_id), kv_block_size_(kv_block_size), next_id_(first_event_id) {}

protocol::kv_event vllm_event_converter::convert_stored(const vllm_event& ev) {
  protocol::kv_event out;
  // Every hash (and the parent) must be distinct, or the chain would loop.
  std::vector<uint64_t> seen(ev.block_hashes);
  if (ev.parent_block_hash)
    seen.push_back(*ev.parent_block_hash);
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) {
    ++self_referencing_;
    spdlog::warn("vllm kv event: duplicate hash in a stored event of worker {:x}; dropped",
                 worker_id_);
    out.kind = protocol::kv_event_kind::removed; // empty removal: a no-op
    return out;
  }
  out.kind = protocol::kv_event_kind::stored;
  out.parent_hash = ev.parent_block_hash;
  const size_t window = kv_block_size_ + (ev.bigram ? 1u : 0u);
  std::string_view lora = ev.lora_name ? std::string_view{*ev.lora_name} : std::string_view{};
  size_t offset = 0;
  for (size_t i = 0; i < ev.block_hashes.size(); ++i) {
    bool wrong_size = ev.block_size != kv_block_size_;
    if (wrong_size || offset + window > ev.token_ids.size()) {
      if (truncated_++ < 3)
        spdlog::warn("vllm kv event: block not indexed: {} (router block size {})",
                     wrong_size ? fmt::format("engine block size {}", ev.block_size)
                                : std::string{"token_ids too short"},
                     kv_block_size_);
      break;
    }
    std::span<const uint32_t> tokens{ev.token_ids.data() + offset, window};
    std::span<const uint64_t> mm;
    if (i < ev.mm_hashes.size())
      mm = ev.mm_hashes[i];
    out.blocks.push_back({ev.block_hashes[i], tokens_hash_of(tokens, lora, mm)});
    offset += kv_block_size_;
  }
  return out;
}

std::vector<protocol::router_event> vllm_event_converter::convert(const vllm_event_batch& batch) {
  std::vector<protocol::router_event> out;
  uint32_t dp_rank = 0;
  if (batch.dp_rank && *batch.dp_rank > 0 && *batch.dp_rank <= INT32_MAX)
    dp_rank = static_cast<uint32_t>(*batch.dp_rank);
  for (const vllm_event& ev : batch.events) {
    if (ev.kind == vllm_event_kind::ignored)
      continue;
    if (ev.kind != vllm_event_kind::all_blocks_cleared &&
        tier_of_medium(ev.medium ? std::optional<std::string_view>{*ev.medium} : std::nullopt) !=
            storage_tier::device) {
      ++skipped_off_device_;
      continue;
    }
    protocol::router_event re;
    re.worker_id = worker_id_;
    switch (ev.kind) {
    case vllm_event_kind::block_stored:
      re.event = convert_stored(ev);
      break;
    case vllm_event_kind::block_removed:
      re.event.kind = protocol::kv_event_kind::removed;
      re.event.removed_hashes = ev.block_hashes;
      break;
    default:
      re.event.kind = protocol::kv_event_kind::cleared;
      break;
    }
    re.event.event_id = next_id_++;
    re.event.dp_rank = dp_rank;
    out.push_back(std::move(re));
  }
  return out;
}

} // namespace dynamo::route
