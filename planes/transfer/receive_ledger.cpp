#include "planes/transfer/receive_ledger.hpp"

#include <fmt/format.h>

#include <limits>

namespace dynamo::planes::transfer_detail {

namespace {
constexpr size_t max_dead_keys = 4096;
} // namespace

expected<uint64_t> check_landing(const protocol::kv_region_geometry& g, uint64_t block,
                                 uint64_t length) {
  const uint64_t bpb = g.layout.bytes_per_block;
  if (bpb == 0 || length == 0 || length % bpb != 0)
    return make_error(errc::malformed_message,
                      fmt::format("kv data: {} bytes is not whole blocks of {}", length, bpb));
  const uint64_t blocks = length / bpb;
  if (blocks > 1 && g.block_stride != bpb)
    return make_error(errc::malformed_message, "kv data: a multi-block run into strided blocks");
  if (block >= g.num_blocks || blocks > g.num_blocks - block)
    return make_error(errc::malformed_message,
                      fmt::format("kv data: blocks [{}, {}) outside the region's {} blocks", block,
                                  block + blocks, g.num_blocks));
  return blocks;
}

expected<std::vector<landing_span>> check_runs(const protocol::kv_region_geometry& g,
                                               std::span<const landing_run> runs, uint64_t length,
                                               uint64_t& blocks) {
  const uint64_t bpb = g.layout.bytes_per_block;
  std::vector<landing_span> spans;
  spans.reserve(runs.size());
  uint64_t total = 0;
  blocks = 0;
  for (const auto& r : runs) {
    uint64_t bytes = uint64_t{r.blocks} * bpb;
    if (r.blocks != 0 && bytes / r.blocks != bpb)
      return make_error(errc::malformed_message, "kv data: run size overflows");
    auto n = check_landing(g, r.dst_block, bytes);
    if (!n)
      return n.error();
    // Inside the region: dst_block * stride + bytes cannot overflow (check_landing).
    spans.push_back({r.dst_block * g.block_stride, bytes});
    blocks += *n;
    if (bytes > length - total) // also keeps `total` from wrapping
      return make_error(errc::malformed_message, "kv data: runs do not add up to the payload");
    total += bytes;
  }
  if (total != length)
    return make_error(errc::malformed_message, "kv data: runs do not add up to the payload");
  return spans;
}

bool receive_ledger::is_dead(const key& k) const {
  return dead_.count(k) != 0;
}

std::optional<protocol::kv_transfer_status>
receive_ledger::on_data(const key& k, uint64_t blocks, uint64_t bytes, clock::time_point now) {
  if (is_dead(k))
    return std::nullopt;
  auto [it, inserted] = open_.try_emplace(k);
  if (inserted)
    it->second.started = now;
  it->second.blocks += blocks;
  it->second.bytes += bytes;
  return settle(k, it->second);
}

std::optional<protocol::kv_transfer_status> receive_ledger::on_done(const key& k, uint64_t blocks,
                                                                    uint64_t bytes,
                                                                    bool out_of_band,
                                                                    clock::time_point now) {
  if (is_dead(k))
    return std::nullopt;
  auto [it, inserted] = open_.try_emplace(k);
  if (inserted)
    it->second.started = now;
  if (out_of_band) {
    it->second.blocks += blocks;
    it->second.bytes += bytes;
  }
  it->second.declared_blocks = blocks;
  it->second.declared_bytes = bytes;
  return settle(k, it->second);
}

std::optional<protocol::kv_transfer_status> receive_ledger::settle(const key& k, entry& e) {
  if (!e.declared_blocks)
    return std::nullopt;
  if (e.blocks < *e.declared_blocks)
    return std::nullopt; // data still landing (a rendezvous after the done message)
  protocol::kv_transfer_status s;
  if (e.blocks == *e.declared_blocks && e.bytes == e.declared_bytes) {
    s = ok_status(k.second, k.first, e.blocks, e.bytes, e.started);
    open_.erase(k);
    return s;
  }
  s = error_status(k.second, k.first, errc::malformed_message,
                   fmt::format("kv transfer {}: {} blocks / {} bytes landed but {} / {} declared",
                               k.second, e.blocks, e.bytes, *e.declared_blocks, e.declared_bytes),
                   e.started);
  open_.erase(k);
  bury(k);
  return s;
}

protocol::kv_transfer_status receive_ledger::fail(const key& k, errc code, std::string message,
                                                  clock::time_point now) {
  auto started = now;
  uint64_t blocks = 0, bytes = 0;
  if (auto it = open_.find(k); it != open_.end()) {
    started = it->second.started;
    blocks = it->second.blocks;
    bytes = it->second.bytes;
    open_.erase(it);
  }
  bury(k);
  auto s = error_status(k.second, k.first, code, std::move(message), started);
  s.blocks = blocks;
  s.bytes = bytes;
  return s;
}

std::vector<protocol::kv_transfer_status> receive_ledger::expire(clock::time_point now) {
  std::vector<key> stale;
  for (const auto& [k, e] : open_) {
    if (now - e.started >= stale_after_)
      stale.push_back(k);
  }
  std::vector<protocol::kv_transfer_status> out;
  for (const auto& k : stale)
    out.push_back(fail(k, errc::timeout,
                       fmt::format("kv transfer {}: abandoned after {} ms without completing",
                                   k.second, stale_after_.count()),
                       now));
  return out;
}

std::vector<receive_ledger::key> receive_ledger::open_keys() const {
  std::vector<key> out;
  for (const auto& [k, e] : open_)
    out.push_back(k);
  return out;
}

void receive_ledger::bury(const key& k) {
  if (!dead_.insert(k).second)
    return;
  dead_order_.push_back(k);
  if (dead_order_.size() > max_dead_keys) {
    dead_.erase(dead_order_.front());
    dead_order_.pop_front();
  }
}

} // namespace dynamo::planes::transfer_detail
