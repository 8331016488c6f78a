#include "runtime/kv/block_pool.hpp"

#include <cassert>
#include <string>

namespace dynamo::kv {

block_pool::block_pool(uint32_t num_blocks, bool emit_events)
    : blocks_(num_blocks), emit_events_(emit_events) {
  assert(num_blocks > 0);
  for (uint32_t id = 0; id < num_blocks; ++id)
    push_back(id);
}

float block_pool::usage() const noexcept {
  return static_cast<float>(num_used_blocks()) / static_cast<float>(num_blocks());
}

std::vector<uint32_t> block_pool::lookup_prefix(std::span<const uint64_t> sequence_hashes) const {
  std::vector<uint32_t> ids;
  for (uint64_t h : sequence_hashes) {
    auto it = cached_.find(h);
    if (it == cached_.end())
      break;
    ids.push_back(it->second);
  }
  return ids;
}

uint32_t block_pool::count_free(std::span<const uint32_t> ids) const {
  uint32_t n = 0;
  for (uint32_t id : ids)
    n += blocks_[id].info.ref_count == 0 ? 1 : 0;
  return n;
}

void block_pool::acquire(std::span<const uint32_t> ids) {
  for (uint32_t id : ids) {
    node& b = blocks_[id];
    if (b.info.ref_count++ == 0)
      unlink(id);
  }
}

std::optional<std::vector<uint32_t>> block_pool::allocate(uint32_t n) {
  if (n > num_free_)
    return std::nullopt;
  std::vector<uint32_t> ids;
  ids.reserve(n);
  protocol::kv_event* removed = nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t id = head_;
    unlink(id);
    node& b = blocks_[id];
    if (b.info.cached) {
      const uint64_t h = evict(id);
      if (emit_events_) {
        if (removed == nullptr)
          removed = &new_event(protocol::kv_event_kind::removed);
        removed->removed_hashes.push_back(h);
      }
    }
    b.info.ref_count = 1;
    ids.push_back(id);
  }
  return ids;
}

void block_pool::free(std::span<const uint32_t> block_table) {
  for (auto it = block_table.rbegin(); it != block_table.rend(); ++it) {
    node& b = blocks_[*it];
    assert(b.info.ref_count > 0);
    if (--b.info.ref_count != 0)
      continue;
    if (b.info.cached)
      push_back(*it);
    else
      push_front(*it);
  }
}

void block_pool::cache_full_blocks(std::span<uint32_t> ids, std::span<const uint64_t> sequence_hashes,
                                   std::span<const uint64_t> local_hashes,
                                   std::optional<uint64_t> parent) {
  assert(ids.size() == sequence_hashes.size() && ids.size() == local_hashes.size());
  protocol::kv_event* run = nullptr; // the stored event of the current run
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint64_t h = sequence_hashes[i];
    const std::optional<uint64_t> parent_of_i = i == 0 ? parent : std::optional{sequence_hashes[i - 1]};
    auto [it, inserted] = cached_.emplace(h, ids[i]);
    if (!inserted) {
      if (it->second != ids[i]) { // merge the duplicate into the cached block
        const uint32_t dup = ids[i];
        ids[i] = it->second;
        acquire(std::span<const uint32_t>{&ids[i], 1});
        free(std::span<const uint32_t>{&dup, 1});
      }
      run = nullptr; // nothing new to store: the run breaks
      continue;
    }
    block_info& info = blocks_[ids[i]].info;
    assert(info.ref_count > 0 && !info.cached);
    info.cached = true;
    info.sequence_hash = h;
    info.tokens_hash = local_hashes[i];
    info.parent_hash = parent_of_i;
    if (track_registrations_)
      registered_.push_back(registered_block{ids[i], h, local_hashes[i], parent_of_i});
    if (!emit_events_)
      continue;
    if (run == nullptr) {
      run = &new_event(protocol::kv_event_kind::stored);
      run->parent_hash = parent_of_i;
    }
    run->blocks.push_back(protocol::kv_stored_block{h, local_hashes[i]});
  }
}

bool block_pool::reset_prefix_cache() {
  if (num_used_blocks() != 0)
    return false;
  for (auto& [hash, id] : cached_)
    blocks_[id].info = block_info{};
  cached_.clear();
  if (emit_events_)
    (void)new_event(protocol::kv_event_kind::cleared);
  return true;
}

std::vector<protocol::kv_event> block_pool::drain_events() {
  std::vector<protocol::kv_event> out;
  out.swap(events_);
  return out;
}

void block_pool::push_event(protocol::kv_event e) {
  if (!emit_events_)
    return;
  e.event_id = next_event_id_++;
  events_.push_back(std::move(e));
}

std::vector<uint32_t> block_pool::free_queue() const {
  std::vector<uint32_t> ids;
  ids.reserve(num_free_);
  for (uint32_t id = head_; id != npos; id = blocks_[id].next)
    ids.push_back(id);
  return ids;
}

void block_pool::unlink(uint32_t id) {
  node& b = blocks_[id];
  assert(b.in_free_queue);
  (b.prev == npos ? head_ : blocks_[b.prev].next) = b.next;
  (b.next == npos ? tail_ : blocks_[b.next].prev) = b.prev;
  b.prev = b.next = npos;
  b.in_free_queue = false;
  --num_free_;
}

void block_pool::push_front(uint32_t id) {
  node& b = blocks_[id];
  b.prev = npos;
  b.next = head_;
  (head_ == npos ? tail_ : blocks_[head_].prev) = id;
  head_ = id;
  b.in_free_queue = true;
  ++num_free_;
}

void block_pool::push_back(uint32_t id) {
  node& b = blocks_[id];
  b.next = npos;
  b.prev = tail_;
  (tail_ == npos ? head_ : blocks_[tail_].next) = id;
  tail_ = id;
  b.in_free_queue = true;
  ++num_free_;
}

uint64_t block_pool::evict(uint32_t id) {
  block_info& info = blocks_[id].info;
  const uint64_t h = info.sequence_hash;
  cached_.erase(h);
  info = block_info{};
  return h;
}

protocol::kv_event& block_pool::new_event(protocol::kv_event_kind kind) {
  protocol::kv_event& e = events_.emplace_back();
  e.event_id = next_event_id_++;
  e.kind = kind;
  return e;
}

std::string block_pool::invariant_violation() const {
  uint32_t queued = 0;
  for (uint32_t id = head_, prev = npos; id != npos; prev = id, id = blocks_[id].next) {
    if (blocks_[id].prev != prev)
      return "free queue link broken at block " + std::to_string(id);
    if (++queued > num_blocks())
      return "free queue has a cycle";
  }
  if (queued != num_free_)
    return "free queue length " + std::to_string(queued) + " != num_free " + std::to_string(num_free_);
  uint32_t cached = 0;
  for (uint32_t id = 0; id < num_blocks(); ++id) {
    const node& b = blocks_[id];
    if (b.in_free_queue != (b.info.ref_count == 0))
      return "block " + std::to_string(id) + " ref_count " + std::to_string(b.info.ref_count) +
             (b.in_free_queue ? " but in" : " but not in") + " the free queue";
    if (!b.info.cached)
      continue;
    ++cached;
    auto it = cached_.find(b.info.sequence_hash);
    if (it == cached_.end() || it->second != id)
      return "cached block " + std::to_string(id) + " is not the one registered under its hash";
  }
  if (cached != cached_.size())
    return "hash map holds " + std::to_string(cached_.size()) + " entries for " +
           std::to_string(cached) + " cached blocks";
  return {};
}

} // namespace dynamo::kv
