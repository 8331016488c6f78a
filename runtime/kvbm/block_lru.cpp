#include "runtime/kvbm/block_lru.hpp"

#include <algorithm>

namespace dynamo::kvbm {

std::vector<block_lru::evicted> block_lru::insert(uint64_t hash, block_bytes bytes, uint32_t priority,
                                                  std::optional<uint64_t> parent) {
  std::vector<evicted> out;
  if (capacity_ == 0) {
    out.push_back(evicted{hash, std::move(bytes)});
    return out;
  }
  if (auto it = entries_.find(hash); it != entries_.end()) {
    const bool leaf = it->second.children == 0;
    if (leaf)
      order_.erase(it->second.key);
    it->second.key = {priority, ++tick_};
    if (leaf)
      order_.emplace(it->second.key, hash);
    return out;
  }
  while (entries_.size() >= capacity_) { // a non-empty forest has a leaf
    auto victim = order_.begin();
    auto e = entries_.find(victim->second);
    out.push_back(evicted{victim->second, std::move(e->second.bytes)});
    const std::optional<uint64_t> up = e->second.parent;
    order_.erase(victim);
    entries_.erase(e);
    drop_child(up);
  }
  if (parent && *parent != hash) {
    if (auto p = entries_.find(*parent); p != entries_.end()) {
      if (p->second.children++ == 0)
        order_.erase(p->second.key); // no longer a leaf
    } else {
      parent.reset();
    }
  } else {
    parent.reset();
  }
  const order_key key{priority, ++tick_};
  entries_.emplace(hash, entry{std::move(bytes), key, parent, 0});
  order_.emplace(key, hash);
  return out;
}

void block_lru::drop_child(std::optional<uint64_t> parent) {
  if (!parent)
    return;
  auto p = entries_.find(*parent);
  if (p == entries_.end())
    return;
  if (--p->second.children == 0)
    order_.emplace(p->second.key, *parent);
}

bool block_lru::touch(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end())
    return false;
  const bool leaf = it->second.children == 0;
  if (leaf)
    order_.erase(it->second.key);
  it->second.key.second = ++tick_;
  if (leaf)
    order_.emplace(it->second.key, hash);
  return true;
}

bool block_lru::erase(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end())
    return false;
  if (it->second.children == 0)
    order_.erase(it->second.key);
  else // orphan its children: they become roots (and stay leaves or not as they are)
    for (auto& [h, e] : entries_)
      if (e.parent == hash)
        e.parent.reset();
  const std::optional<uint64_t> up = it->second.parent;
  entries_.erase(it);
  drop_child(up);
  return true;
}

std::vector<uint64_t> block_lru::eviction_order() const {
  std::vector<uint64_t> out;
  out.reserve(order_.size());
  for (const auto& [key, hash] : order_)
    out.push_back(hash);
  return out;
}

std::vector<std::pair<uint64_t, uint32_t>> block_lru::use_order() const {
  std::vector<std::pair<order_key, uint64_t>> keyed;
  keyed.reserve(entries_.size());
  for (const auto& [hash, e] : entries_)
    keyed.emplace_back(e.key, hash);
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<uint64_t, uint32_t>> out;
  out.reserve(keyed.size());
  for (const auto& [key, hash] : keyed)
    out.emplace_back(hash, key.first);
  return out;
}

} // namespace dynamo::kvbm
