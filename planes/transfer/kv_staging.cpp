#include "planes/transfer/kv_staging.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <numeric>

#if DYNAMO_TRANSFER_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace dynamo::planes {

kv_staging_pool::kv_staging_pool(uint32_t slots, uint64_t block_bytes) : block_bytes_(block_bytes), slots_(slots) {
  const size_t bytes = std::max<size_t>(1, size_t(slots) * block_bytes);
#if DYNAMO_TRANSFER_HAVE_CUDA
  pinned_ = cudaMallocHost(&base_, bytes) == cudaSuccess;
  if (!pinned_) {
    base_ = nullptr;
    (void)cudaGetLastError(); // no device here: not an error for host staging
  }
#endif
  if (base_ == nullptr)
    base_ = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  free_.resize(slots);
  std::iota(free_.rbegin(), free_.rend(), 0u); // pop_back hands out 0, 1, 2, ...
}

kv_staging_pool::kv_staging_pool(const kv_region& memory, std::shared_ptr<void> owner)
    : block_bytes_(memory.block_stride), slots_(static_cast<uint32_t>(memory.num_blocks)),
      base_(memory.base), owner_(std::move(owner)) {
#if DYNAMO_TRANSFER_HAVE_CUDA
  const size_t bytes = size_t(slots_) * block_bytes_;
  registered_ = bytes > 0 && cudaHostRegister(base_, bytes, cudaHostRegisterDefault) == cudaSuccess;
  if (!registered_)
    (void)cudaGetLastError(); // no device, or memory CUDA cannot pin: copies still work, slower
#endif
  free_.resize(slots_);
  std::iota(free_.rbegin(), free_.rend(), 0u);
}

kv_staging_pool::~kv_staging_pool() {
#if DYNAMO_TRANSFER_HAVE_CUDA
  if (registered_)
    (void)cudaHostUnregister(base_);
  if (pinned_) {
    (void)cudaFreeHost(base_);
    return;
  }
#endif
  if (!owner_)
    std::free(base_);
}

kv_region kv_staging_pool::region() const noexcept {
  kv_region r;
  r.base = base_;
  r.num_blocks = slots_;
  r.block_stride = block_bytes_;
  r.memory = kv_memory::host;
  return r;
}

void kv_staging_pool::reclaim_locked() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(quarantine_, [&](auto& q) {
    if (q.first > now)
      return false;
    free_.insert(free_.end(), q.second.begin(), q.second.end());
    return true;
  });
}

void kv_staging_pool::release_later(const std::vector<uint32_t>& slots, std::chrono::milliseconds delay) {
  std::lock_guard lock{mutex_};
  quarantine_.emplace_back(std::chrono::steady_clock::now() + delay, slots);
}

std::optional<std::vector<uint32_t>> kv_staging_pool::acquire(size_t n) {
  std::lock_guard lock{mutex_};
  reclaim_locked();
  if (n > free_.size())
    return std::nullopt;
  std::vector<uint32_t> out(free_.end() - static_cast<std::ptrdiff_t>(n), free_.end());
  free_.resize(free_.size() - n);
  return out;
}

void kv_staging_pool::release(const std::vector<uint32_t>& slots) {
  std::lock_guard lock{mutex_};
  free_.insert(free_.end(), slots.begin(), slots.end());
}

size_t kv_staging_pool::free_slots() const {
  std::lock_guard lock{mutex_};
  return free_.size(); // quarantined slots not yet reclaimed do not count
}

expected<void> kv_staging_pool::gather(const kv_region& from, const std::vector<uint32_t>& blocks,
                                       const std::vector<uint32_t>& slots) {
  return copy(from, true, blocks, slots);
}

expected<void> kv_staging_pool::scatter(const std::vector<uint32_t>& slots, const kv_region& to,
                                        const std::vector<uint32_t>& blocks) {
  return copy(to, false, blocks, slots);
}

expected<void> kv_staging_pool::copy(const kv_region& device, bool to_slots, const std::vector<uint32_t>& blocks,
                                     const std::vector<uint32_t>& slots) {
  if (blocks.size() != slots.size())
    return make_error(errc::invalid_argument, "kv staging: block and slot counts differ");
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i] >= device.num_blocks || slots[i] >= slots_)
      return make_error(errc::invalid_argument, fmt::format("kv staging: block {} or slot {} out of range",
                                                            blocks[i], slots[i]));
  }
  auto* staging = static_cast<uint8_t*>(base_);
  auto* dev = static_cast<uint8_t*>(device.base);
  if (device.memory != kv_memory::cuda_device) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      uint8_t* s = staging + slots[i] * block_bytes_;
      uint8_t* d = dev + blocks[i] * device.block_stride;
      std::memcpy(to_slots ? s : d, to_slots ? d : s, block_bytes_);
    }
    return {};
  }
#if DYNAMO_TRANSFER_HAVE_CUDA
  // One stream-ordered batch on a private stream, then one synchronize.
  auto fail = [](const char* what, cudaError_t e) {
    return make_error(errc::device_error, fmt::format("kv staging: {}: {}", what, cudaGetErrorString(e)));
  };
  if (auto e = cudaSetDevice(device.device); e != cudaSuccess)
    return fail("cudaSetDevice", e);
  cudaStream_t stream = nullptr;
  if (auto e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
    return fail("stream", e);
  cudaError_t err = cudaSuccess;
  for (size_t i = 0; i < blocks.size() && err == cudaSuccess; ++i) {
    uint8_t* s = staging + slots[i] * block_bytes_;
    uint8_t* d = dev + blocks[i] * device.block_stride;
    err = cudaMemcpyAsync(to_slots ? s : d, to_slots ? d : s, block_bytes_, cudaMemcpyDefault, stream);
  }
  const cudaError_t synced = cudaStreamSynchronize(stream);
  (void)cudaStreamDestroy(stream);
  if (err != cudaSuccess)
    return fail("copy", err);
  if (synced != cudaSuccess)
    return fail("synchronize", synced);
  return {};
#else
  return make_error(errc::unsupported, "kv staging: device memory in a build without CUDA");
#endif
}

} // namespace dynamo::planes
