#include "runtime/kvbm/block_lru.hpp"

#include <algorithm>

namespace dynamo::kvbm {

void block_lru::unlist(const entry& e) {
  if (evictable(e))
    order_.erase(order_of(e));
}

void block_lru::list(uint64_t hash, const entry& e) {
  if (evictable(e))
    order_.emplace(order_of(e), hash);
}

std::vector<block_lru::evicted> block_lru::insert(uint64_t hash, block_bytes bytes, uint32_t priority,
                                                  std::optional<uint64_t> parent) {
  std::vector<evicted> out;
  if (capacity_ == 0) {
    out.push_back(evicted{hash, std::move(bytes)});
    return out;
  }
  if (auto it = entries_.find(hash); it != entries_.end()) {
    unlist(it->second);
    it->second.key = {priority, ++tick_};
    list(hash, it->second);
    return out;
  }
  while (entries_.size() >= capacity_) { // a non-empty forest has a leaf
    auto e = entries_.find(order_.begin()->second);
    out.push_back(evicted{e->first, std::move(e->second.bytes)});
    remove(e);
  }
  entry fresh{std::move(bytes), {priority, ++tick_}, std::nullopt, {}, false};
  if (parent && *parent != hash) {
    if (auto p = entries_.find(*parent); p != entries_.end()) {
      unlist(p->second); // no longer a leaf
      p->second.children.push_back(hash);
      list(*parent, p->second);
      fresh.parent = parent;
    }
  }
  list(hash, entries_.emplace(hash, std::move(fresh)).first->second);
  return out;
}

void block_lru::remove(entry_map::iterator it) {
  unlist(it->second);
  for (uint64_t c : it->second.children) // they become roots, leaves or not as they are
    entries_.at(c).parent.reset();
  if (it->second.parent) {
    auto p = entries_.find(*it->second.parent);
    unlist(p->second);
    std::vector<uint64_t>& siblings = p->second.children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), it->first));
    list(p->first, p->second); // a parent left childless is evictable again, at its own last use
  }
  entries_.erase(it);
}

bool block_lru::set_backed(uint64_t hash, bool backed) {
  auto it = entries_.find(hash);
  if (it == entries_.end())
    return false;
  unlist(it->second);
  it->second.backed = backed;
  list(hash, it->second);
  return true;
}

bool block_lru::touch(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end())
    return false;
  unlist(it->second);
  it->second.key.second = ++tick_;
  list(hash, it->second);
  return true;
}

bool block_lru::erase(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end())
    return false;
  remove(it);
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
  std::vector<std::pair<use_key, uint64_t>> keyed;
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
