#include "runtime/route/active_sequences.hpp"

#include <algorithm>

namespace dynamo::route {

active_sequences::active_sequences(uint32_t block_size) : block_size_(block_size) {}

bool active_sequences::add_request(const std::string& request_id, const worker_key& worker,
                                   std::span<const uint64_t> seq_hashes, uint32_t isl,
                                   uint64_t cached_tokens, bool track_prefill) {
  auto [it, inserted] = requests_.try_emplace(request_id);
  if (!inserted)
    return false;
  request& r = it->second;
  r.worker = worker;
  r.seq_hashes.assign(seq_hashes.begin(), seq_hashes.end());
  if (block_size_ > 0 && isl % block_size_ != 0)
    r.seq_hashes.push_back(mix64(++tail_counter_ ^ 0x7f4a7c159e3779b9ull)); // partial tail block
  r.prefill_tokens = track_prefill && isl > cached_tokens ? isl - cached_tokens : 0;
  worker_load& load = loads_[worker];
  for (uint64_t h : r.seq_hashes)
    ++load.blocks[h];
  load.prefill_tokens += r.prefill_tokens;
  ++load.requests;
  return true;
}

bool active_sequences::mark_prefill_completed(const std::string& request_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end() || it->second.prefill_done)
    return false;
  request& r = it->second;
  r.prefill_done = true;
  loads_[r.worker].prefill_tokens -= r.prefill_tokens;
  r.prefill_tokens = 0;
  return true;
}

void active_sequences::release(request& r) {
  auto lit = loads_.find(r.worker);
  if (lit == loads_.end())
    return;
  worker_load& load = lit->second;
  for (uint64_t h : r.seq_hashes) {
    auto b = load.blocks.find(h);
    if (b != load.blocks.end() && --b->second == 0)
      load.blocks.erase(b);
  }
  load.prefill_tokens -= r.prefill_tokens;
  if (--load.requests == 0)
    loads_.erase(lit);
}

bool active_sequences::free(const std::string& request_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end())
    return false;
  release(it->second);
  requests_.erase(it);
  return true;
}

size_t active_sequences::remove_worker(uint64_t worker_id) {
  size_t n = std::erase_if(requests_, [&](const auto& kv) {
    return kv.second.worker.worker_id == worker_id;
  });
  std::erase_if(loads_, [&](const auto& kv) { return kv.first.worker_id == worker_id; });
  return n;
}

uint64_t active_sequences::active_prefill_tokens(const worker_key& worker) const {
  auto it = loads_.find(worker);
  return it == loads_.end() ? 0 : it->second.prefill_tokens;
}

uint64_t active_sequences::active_decode_blocks(const worker_key& worker) const {
  auto it = loads_.find(worker);
  return it == loads_.end() ? 0 : it->second.blocks.size();
}

size_t active_sequences::active_requests(const worker_key& worker) const {
  auto it = loads_.find(worker);
  return it == loads_.end() ? 0 : it->second.requests;
}

bool active_sequences::knows(const worker_key& worker) const { return loads_.contains(worker); }

uint32_t active_sequences::shared_prefix_blocks(const worker_key& worker,
                                                std::span<const uint64_t> seq_hashes) const {
  auto it = loads_.find(worker);
  if (it == loads_.end())
    return 0;
  uint32_t n = 0;
  for (uint64_t h : seq_hashes) {
    if (!it->second.blocks.contains(h))
      break;
    ++n;
  }
  return n;
}

} // namespace dynamo::route
