#include "runtime/kv/kv_cache_manager.hpp"

#include <algorithm>
#include <cassert>

namespace dynamo::kv {

kv_cache_manager::kv_cache_manager(uint32_t num_blocks, uint32_t block_size,
                                   bool enable_prefix_caching, bool emit_events)
    : block_size_(block_size), prefix_caching_(enable_prefix_caching),
      pool_(num_blocks, emit_events && enable_prefix_caching) {
  assert(block_size > 0);
}

computed_blocks kv_cache_manager::find_computed_blocks(const token_blocks& seq) const {
  computed_blocks hit;
  if (!prefix_caching_ || seq.size() == 0)
    return hit;
  // Blocks lying entirely within the first size()-1 tokens.
  const uint32_t max_blocks = (seq.size() - 1) / block_size_;
  const auto hashes = seq.sequence_hashes().first(std::min(max_blocks, seq.num_full_blocks()));
  hit.block_ids = pool_.lookup_prefix(hashes);
  hit.num_tokens = static_cast<uint32_t>(hit.block_ids.size()) * block_size_;
  return hit;
}

uint32_t kv_cache_manager::blocks_missing(uint64_t seq_id, uint32_t num_tokens,
                                          const computed_blocks& prefix, uint32_t extra) const {
  auto it = tables_.find(seq_id);
  const bool first = it == tables_.end() || it->second.blocks.empty();
  const uint32_t held = first ? static_cast<uint32_t>(prefix.block_ids.size())
                              : static_cast<uint32_t>(it->second.blocks.size());
  const uint32_t needed = blocks_for(num_tokens);
  const uint32_t fresh = (needed > held ? needed - held : 0) + extra;
  // Taking free prefix blocks removes them from the free queue.
  const uint32_t taken = first ? pool_.count_free(prefix.block_ids) : 0;
  const uint32_t available = pool_.num_free_blocks() - taken;
  return fresh > available ? fresh - available : 0;
}

std::optional<std::span<const uint32_t>> kv_cache_manager::allocate_slots(
    uint64_t seq_id, uint32_t num_tokens, const computed_blocks& prefix) {
  if (blocks_missing(seq_id, num_tokens, prefix) != 0)
    return std::nullopt;
  table& t = tables_[seq_id];
  if (t.blocks.empty() && !prefix.block_ids.empty()) {
    pool_.acquire(prefix.block_ids);
    t.blocks = prefix.block_ids;
    t.num_registered = static_cast<uint32_t>(prefix.block_ids.size());
  }
  const uint32_t needed = blocks_for(num_tokens);
  if (needed > t.blocks.size()) {
    auto fresh = pool_.allocate(needed - static_cast<uint32_t>(t.blocks.size()));
    if (!fresh)
      return std::nullopt; // unreachable: blocks_missing() said it fits
    t.blocks.insert(t.blocks.end(), fresh->begin(), fresh->end());
  }
  return std::span<const uint32_t>{t.blocks};
}

std::optional<std::optional<kv_cache_manager::fork_copy>> kv_cache_manager::fork(uint64_t parent, uint64_t child,
                                                                               uint32_t num_tokens) {
  const table& p = tables_.at(parent);
  const uint32_t full = num_tokens / block_size_;
  const bool partial = num_tokens % block_size_ != 0;
  assert(p.blocks.size() >= blocks_for(num_tokens) && tables_.count(child) == 0);
  std::optional<std::vector<uint32_t>> fresh;
  if (partial && !(fresh = pool_.allocate(1)))
    return std::nullopt;
  std::span<const uint32_t> shared{p.blocks.data(), full};
  pool_.acquire(shared);
  table t;
  t.blocks.assign(shared.begin(), shared.end());
  t.num_registered = full;
  std::optional<fork_copy> copy;
  if (partial) {
    t.blocks.push_back(fresh->front());
    copy = fork_copy{p.blocks[full], fresh->front()};
  }
  tables_.emplace(child, std::move(t));
  return copy;
}

void kv_cache_manager::cache_blocks(uint64_t seq_id, const token_blocks& seq, uint32_t num_computed) {
  if (!prefix_caching_)
    return;
  auto it = tables_.find(seq_id);
  if (it == tables_.end())
    return;
  table& t = it->second;
  const uint32_t full = std::min(num_computed / block_size_, seq.num_full_blocks());
  assert(full <= t.blocks.size());
  if (full <= t.num_registered)
    return;
  const uint32_t first = t.num_registered;
  const uint32_t count = full - first;
  const auto seq_hashes = seq.sequence_hashes();
  const std::optional<uint64_t> parent =
      first == 0 ? std::nullopt : std::optional{seq_hashes[first - 1]};
  pool_.cache_full_blocks(std::span<uint32_t>{t.blocks}.subspan(first, count),
                          seq_hashes.subspan(first, count), seq.local_hashes().subspan(first, count),
                          parent);
  t.num_registered = full;
}

void kv_cache_manager::free(uint64_t seq_id) {
  auto it = tables_.find(seq_id);
  if (it == tables_.end())
    return;
  pool_.free(it->second.blocks);
  tables_.erase(it);
}

std::vector<uint32_t> kv_cache_manager::detach(uint64_t seq_id) {
  auto it = tables_.find(seq_id);
  if (it == tables_.end())
    return {};
  std::vector<uint32_t> blocks = std::move(it->second.blocks);
  tables_.erase(it);
  return blocks;
}

std::span<const uint32_t> kv_cache_manager::block_table(uint64_t seq_id) const {
  auto it = tables_.find(seq_id);
  if (it == tables_.end())
    return {};
  return it->second.blocks;
}

} // namespace dynamo::kv
