// Moves onboarded KV blocks into the engine's KV memory (G1): host slabs by
// copy, disk records by verified reads straight into the destination blocks:
// adjacent records of a segment form a run, read by one reader in preadv's of
// up to disk_read_bytes one after another, several runs at once on a pool of
// readers.
// Runs its jobs on one I/O thread of its own (or inline, for tests and
// policy-only tiers), so other requests keep stepping while a prompt's blocks
// come in.
// submit()/poll()/wait()/drain() are called from the engine's step thread;
// only the I/O thread writes G1, and only into blocks the scheduler keeps out
// of every batch (a request waiting for KV).
#pragma once

#include "runtime/kvbm/block_lru.hpp"
#include "runtime/kvbm/disk_store.hpp"

#include "kernels/reference/thread_pool.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dynamo::kvbm {

/// The engine's KV memory in host address space: block i at base + i * stride.
struct g1_view {
  std::byte* base = nullptr;
  uint64_t block_stride = 0;
  uint64_t block_bytes = 0; ///< bytes of one block that hold KV
  uint32_t num_blocks = 0;
  [[nodiscard]] std::span<std::byte> block(uint32_t id) const noexcept {
    return {base + uint64_t{id} * block_stride, block_bytes};
  }
};

/// One block to bring in: from a host slab, or else from a disk record.
struct onboard_item {
  uint32_t destination = 0; ///< G1 block id
  uint64_t sequence_hash = 0;
  block_bytes slab;         ///< G2: the bytes (kept alive by this job)
  disk_location disk;       ///< G3, when no slab (no file: a missing block)
};

struct onboard_job {
  std::string request_id;
  std::vector<onboard_item> items; ///< position order
};

struct onboard_done {
  std::string request_id;
  bool ok = true; ///< every item landed
  /// Disk items that did not read (the connector forgets them and counts
  /// them), in the job's order.
  std::vector<std::pair<uint64_t, read_status>> disk_failures;
  uint64_t disk_bytes = 0;    ///< payload bytes read from disk
  double disk_seconds = 0;    ///< wall time from the first disk read to the last
  uint32_t disk_reads = 0;    ///< preadv calls it took (pieces of runs of adjacent records)
};

class onboard_worker {
public:
  /// `g1`: where bytes go (nullopt: policy only, jobs finish at once with
  /// nothing moved). `threaded`: a thread of its own, else jobs run in submit().
  /// `disk_readers`: runs read at once (the running thread included), each
  /// in reads of at most `disk_read_bytes` (but at least one record).
  onboard_worker(std::optional<g1_view> g1, bool threaded, unsigned disk_readers = 1,
                 uint64_t disk_read_bytes = uint64_t{4} << 20);
  ~onboard_worker(); ///< finishes what was submitted, then joins
  onboard_worker(const onboard_worker&) = delete;
  onboard_worker& operator=(const onboard_worker&) = delete;

  void submit(onboard_job job);
  /// Jobs finished since the last poll, in the order they finished.
  [[nodiscard]] std::vector<onboard_done> poll();
  /// Waits until a job is finished (and not yet polled) or `timeout` passes;
  /// true when one is.
  bool wait(std::chrono::milliseconds timeout);
  /// Waits until every submitted job is finished.
  void drain();
  /// Submitted and not yet polled.
  [[nodiscard]] size_t in_flight() const;

private:
  [[nodiscard]] onboard_done run(const onboard_job& job) const;
  /// Reads the job's disk items `disk_items` (coalesced), filling `d`.
  void read_disk(const onboard_job& job, std::vector<uint32_t> disk_items, onboard_done& d) const;
  void loop();

  std::optional<g1_view> g1_;
  uint64_t disk_read_bytes_;
  /// Reads a job's disk items in parallel; driven only by the thread running jobs.
  std::unique_ptr<kernels::ref::thread_pool> readers_;
  mutable std::mutex mtx_;
  std::condition_variable work_cv_; ///< jobs queued, or stopping
  std::condition_variable done_cv_; ///< a job finished
  std::deque<onboard_job> queue_;
  std::vector<onboard_done> done_;
  size_t running_ = 0;   ///< jobs taken by the thread, not finished
  size_t submitted_ = 0; ///< submitted and not yet polled
  bool stop_ = false;
  std::thread thread_;
};

} // namespace dynamo::kvbm
