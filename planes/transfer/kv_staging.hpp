// Host staging for device KV blocks over host-only transports (ucx, tcp; Debian's
// UCX has no CUDA transport): a pool of block-sized slots in pinned host memory.
// A sender gathers device blocks into slots and sends the slots; a receiver lets
// the slots be written and then scatters them into device blocks. Used by the
// worker's kv_handoff; thread-safe (acquire/release from transport threads).
#pragma once

#include "planes/transfer/kv_transport.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace dynamo::planes {

class kv_staging_pool {
public:
  /// `slots` slots of `block_bytes` each; pinned (cudaMallocHost) in CUDA builds
  /// when a device is usable, plain host memory otherwise.
  kv_staging_pool(uint32_t slots, uint64_t block_bytes);
  /// Slots over host memory someone else allocated (a ucx receiver's shared
  /// memory): one per block of `memory`, which `owner` keeps alive as long as the
  /// pool. Pinned with cudaHostRegister in CUDA builds when a device is usable.
  kv_staging_pool(const kv_region& memory, std::shared_ptr<void> owner);
  ~kv_staging_pool();
  kv_staging_pool(const kv_staging_pool&) = delete;
  kv_staging_pool& operator=(const kv_staging_pool&) = delete;

  /// The slots as a host region: what the host-only transport sends from or
  /// receives into.
  [[nodiscard]] kv_region region() const noexcept;

  /// `n` free slot ids, or nullopt when fewer are free (the transfer then fails
  /// and the request is prefilled locally).
  [[nodiscard]] std::optional<std::vector<uint32_t>> acquire(size_t n);
  void release(const std::vector<uint32_t>& slots);
  /// Releases `slots` only after `delay`: a failed or timed-out transfer may
  /// still be writing into them (or reading from them) for a while.
  void release_later(const std::vector<uint32_t>& slots, std::chrono::milliseconds delay);
  [[nodiscard]] size_t free_slots() const;

  /// Copies blocks[i] of `from` into slots[i] (sender side).
  [[nodiscard]] expected<void> gather(const kv_region& from, const std::vector<uint32_t>& blocks,
                                      const std::vector<uint32_t>& slots);
  /// Copies slots[i] into blocks[i] of `to` (receiver side).
  [[nodiscard]] expected<void> scatter(const std::vector<uint32_t>& slots, const kv_region& to,
                                       const std::vector<uint32_t>& blocks);

private:
  [[nodiscard]] expected<void> copy(const kv_region& device, bool to_slots, const std::vector<uint32_t>& blocks,
                                    const std::vector<uint32_t>& slots);

  uint64_t block_bytes_;
  uint32_t slots_;
  void* base_ = nullptr;
  // Read only in CUDA builds (DYNAMO_TRANSFER_HAVE_CUDA).
  [[maybe_unused]] bool pinned_ = false;
  [[maybe_unused]] bool registered_ = false; ///< pinned by cudaHostRegister (adopted memory)
  std::shared_ptr<void> owner_; ///< of adopted memory; null when the pool allocated
  mutable std::mutex mutex_;
  std::vector<uint32_t> free_; // guarded by mutex_
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::vector<uint32_t>>> quarantine_; // by mutex_
  void reclaim_locked(); // moves quarantined slots whose time has come to free_
};

} // namespace dynamo::planes
