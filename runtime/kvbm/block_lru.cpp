#include "runtime/kvbm/block_lru.hpp"

namespace dynamo::kvbm {

std::vector<block_lru::evicted> block_lru::insert(uint64_t hash, block_bytes bytes, uint32_t priority) {
  std::vector<evicted> out;
  if (capacity_ == 0) {
    out.push_back(evicted{hash, std::move(bytes)});
    return out;
  }
  if (auto it = entries_.find(hash); it != entries_.end()) {
    order_.erase(it->second.key);
    it->second.key = {priority, ++tick_};
    order_.emplace(it->second.key, hash);
    return out;
  }
  while (entries_.size() >= capacity_) {
    auto victim = order_.begin();
    auto e = entries_.find(victim->second);
    out.push_back(evicted{victim->second, std::move(e->second.bytes)});
    entries_.erase(e);
    order_.erase(victim);
  }
  const order_key key{priority, ++tick_};
  entries_.emplace(hash, entry{std::move(bytes), key});
  order_.emplace(key, hash);
  return out;
}

bool block_lru::touch(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end())
    return false;
  order_.erase(it->second.key);
  it->second.key.second = ++tick_;
  order_.emplace(it->second.key, hash);
  return true;
}

bool block_lru::erase(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end())
    return false;
  order_.erase(it->second.key);
  entries_.erase(it);
  return true;
}

std::vector<uint64_t> block_lru::eviction_order() const {
  std::vector<uint64_t> out;
  out.reserve(order_.size());
  for (const auto& [key, hash] : order_)
    out.push_back(hash);
  return out;
}

} // namespace dynamo::kvbm
