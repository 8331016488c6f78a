#include "planes/transfer/transfer_common.hpp"

#include <fmt/format.h>

#include <fstream>
#include <limits>
#include <random>

#include <unistd.h>

namespace dynamo::planes::transfer_detail {

std::vector<copy_run> plan_runs(const std::vector<uint32_t>& src_ids,
                                const std::vector<uint32_t>& dst_ids, uint64_t src_stride,
                                uint64_t dst_stride, uint64_t bpb, uint64_t max_run) {
  std::vector<copy_run> runs;
  const bool src_touch = src_stride == bpb;
  const bool dst_touch = dst_stride == bpb;
  for (size_t i = 0; i < src_ids.size() && i < dst_ids.size(); ++i) {
    if (!runs.empty() && src_touch && dst_touch && i > 0 &&
        uint64_t{src_ids[i]} == uint64_t{src_ids[i - 1]} + 1 &&
        uint64_t{dst_ids[i]} == uint64_t{dst_ids[i - 1]} + 1 && runs.back().length + bpb <= max_run) {
      runs.back().length += bpb;
      runs.back().blocks += 1;
      continue;
    }
    runs.push_back({src_ids[i] * src_stride, dst_ids[i] * dst_stride, bpb, dst_ids[i], 1});
  }
  return runs;
}

expected<void> check_region(const kv_region& r, const protocol::kv_layout& layout, bool allocate) {
  if (auto ok = protocol::validate(layout); !ok)
    return ok;
  if (allocate && (r.base != nullptr || r.memory != kv_memory::host))
    return make_error(errc::invalid_argument, "kv region to allocate: base must be null, memory host");
  if (!allocate && r.num_blocks > 0 && r.base == nullptr)
    return make_error(errc::invalid_argument, "kv region: null base with blocks");
  if (r.num_blocks > 0 && r.block_stride < layout.bytes_per_block)
    return make_error(errc::invalid_argument,
                      fmt::format("kv region: block stride {} < bytes_per_block {}",
                                  r.block_stride, layout.bytes_per_block));
  if (r.block_stride != 0 && r.num_blocks > std::numeric_limits<uint64_t>::max() / r.block_stride)
    return make_error(errc::invalid_argument, "kv region: size overflows");
  if (r.num_blocks > uint64_t{std::numeric_limits<uint32_t>::max()} + 1)
    return make_error(errc::invalid_argument, "kv region: more blocks than 32-bit ids address");
  return {};
}

protocol::kv_region_geometry geometry_of(const kv_region& region,
                                         const protocol::kv_layout& layout) {
  return {region.num_blocks, region.block_stride, layout};
}

expected<void> check_request(const protocol::kv_transfer_request& req,
                             const protocol::kv_layout& local_layout, const kv_region& local_region,
                             const protocol::kv_region_geometry& remote) {
  if (auto ok = protocol::validate(req); !ok)
    return ok;
  if (auto ok = protocol::check_compatible(local_layout, req.layout); !ok)
    return make_error(errc::invalid_argument, "sender vs request: " + message_of(ok.error()));
  if (auto ok = protocol::check_compatible(req.layout, remote.layout); !ok)
    return make_error(errc::invalid_argument, "request vs receiver: " + message_of(ok.error()));
  if (remote.num_blocks > 0 && remote.block_stride < remote.layout.bytes_per_block)
    return make_error(errc::invalid_argument, "receiver: block stride below bytes_per_block");
  if (remote.block_stride != 0 &&
      remote.num_blocks > std::numeric_limits<uint64_t>::max() / remote.block_stride)
    return make_error(errc::invalid_argument, "receiver: region size overflows");
  for (uint32_t id : req.source_block_ids) {
    if (id >= local_region.num_blocks)
      return make_error(errc::invalid_argument,
                        fmt::format("kv transfer {}: source block {} outside the sender's {} blocks",
                                    req.transfer_id, id, local_region.num_blocks));
  }
  for (uint32_t id : req.destination_block_ids) {
    if (id >= remote.num_blocks)
      return make_error(errc::invalid_argument,
                        fmt::format("kv transfer {}: destination block {} outside the receiver's "
                                    "{} blocks",
                                    req.transfer_id, id, remote.num_blocks));
  }
  return {};
}

protocol::kv_transfer_status ok_status(uint64_t transfer_id, uint64_t source_worker_id,
                                       uint64_t blocks, uint64_t bytes, clock::time_point started) {
  protocol::kv_transfer_status s;
  s.transfer_id = transfer_id;
  s.source_worker_id = source_worker_id;
  s.blocks = blocks;
  s.bytes = bytes;
  s.elapsed_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started).count());
  return s;
}

protocol::kv_transfer_status error_status(uint64_t transfer_id, uint64_t source_worker_id,
                                          errc code, std::string message,
                                          clock::time_point started) {
  auto s = ok_status(transfer_id, source_worker_id, 0, 0, started);
  s.code = static_cast<uint8_t>(code);
  s.message = std::move(message);
  return s;
}

uint64_t new_receiver_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^
                                          (uint64_t(::getpid()) << 32)};
  uint64_t id = 0;
  while (id == 0)
    id = rng();
  return id;
}

} // namespace dynamo::planes::transfer_detail

namespace dynamo::planes {

const std::string& local_host_id() {
  static const std::string id = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0)
      name[0] = '\0';
    std::string boot;
    std::ifstream in{"/proc/sys/kernel/random/boot_id"};
    std::getline(in, boot);
    return std::string{name} + "/" + boot;
  }();
  return id;
}

} // namespace dynamo::planes
