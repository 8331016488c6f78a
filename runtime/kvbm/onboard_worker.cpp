#include "runtime/kvbm/onboard_worker.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace dynamo::kvbm {

onboard_worker::onboard_worker(std::optional<g1_view> g1, bool threaded, unsigned disk_readers,
                               uint64_t disk_read_bytes)
    : g1_(g1), disk_read_bytes_(disk_read_bytes) {
  if (g1_ && disk_readers > 1)
    readers_ = std::make_unique<kernels::ref::thread_pool>(disk_readers);
  if (threaded && g1_)
    thread_ = std::thread([this] { loop(); });
}

onboard_worker::~onboard_worker() {
  {
    std::lock_guard lk(mtx_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

onboard_done onboard_worker::run(const onboard_job& job) const {
  onboard_done d{job.request_id, true, {}, 0, 0, 0};
  if (!g1_)
    return d;
  // Host slabs are copied here; disk items are collected, then read as runs
  // of adjacent records: one small read after another would leave the device
  // far below its sequential speed.
  std::vector<uint32_t> disk_items;
  for (uint32_t i = 0; i < job.items.size(); ++i) {
    const onboard_item& it = job.items[i];
    if (it.destination >= g1_->num_blocks) { // a connector bug; never write out of bounds
      d.ok = false;
      continue;
    }
    const std::span<std::byte> dst = g1_->block(it.destination);
    if (!it.slab) {
      disk_items.push_back(i);
    } else if (it.slab->size() != dst.size()) {
      d.ok = false;
    } else {
      std::memcpy(dst.data(), it.slab->data(), dst.size());
    }
  }
  if (!disk_items.empty())
    read_disk(job, std::move(disk_items), d);
  return d;
}

void onboard_worker::read_disk(const onboard_job& job, std::vector<uint32_t> disk_items, onboard_done& d) const {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<read_status> status(job.items.size(), read_status::ok);
  std::vector<record_span> spans(job.items.size());
  std::vector<uint32_t> readable;
  for (const uint32_t i : disk_items) {
    const onboard_item& it = job.items[i];
    if (!it.disk.file)
      status[i] = read_status::missing;
    else if (it.disk.length != g1_->block_bytes)
      status[i] = read_status::corrupt; // a block of another size: never these bytes
    else
      readable.push_back(i);
    spans[i] = record_span{reinterpret_cast<uintptr_t>(it.disk.file.get()), it.disk.offset, it.disk.length};
  }
  // Runs of adjacent records go to the readers in parallel; each run is read
  // by one reader, piece after piece (each at most disk_read_bytes): reads
  // that go on sequentially keep the kernel's readahead, which parallel reads
  // of one run through one descriptor would defeat.
  const std::vector<read_run> runs = plan_reads(spans, readable, UINT64_MAX, UINT32_MAX);
  std::vector<uint32_t> pieces(runs.size(), 0);
  auto read_one = [&](uint32_t r) {
    std::vector<uint64_t> hashes;
    std::vector<std::span<std::byte>> payloads;
    std::vector<read_status> got;
    for (uint32_t k = runs[r].first, end = runs[r].first + runs[r].count; k < end;) {
      hashes.clear();
      payloads.clear();
      const onboard_item& first = job.items[readable[k]];
      uint64_t bytes = 0;
      for (; k < end && hashes.size() < max_run_records; ++k) {
        const onboard_item& it = job.items[readable[k]];
        if (!hashes.empty() && bytes + sizeof(record_header) + it.disk.length > disk_read_bytes_)
          break;
        bytes += sizeof(record_header) + it.disk.length;
        hashes.push_back(it.sequence_hash);
        payloads.push_back(g1_->block(it.destination));
      }
      got.assign(hashes.size(), read_status::ok);
      first.disk.file->read_run(first.disk.offset, hashes, payloads, got);
      for (size_t i = 0; i < got.size(); ++i)
        status[readable[k - got.size() + i]] = got[i];
      ++pieces[r];
    }
  };
  if (readers_ && runs.size() > 1)
    readers_->parallel_for(static_cast<uint32_t>(runs.size()), read_one);
  else
    for (uint32_t r = 0; r < runs.size(); ++r)
      read_one(r);
  d.disk_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const uint32_t p : pieces)
    d.disk_reads += p;
  std::sort(disk_items.begin(), disk_items.end());
  for (const uint32_t i : disk_items) {
    if (status[i] != read_status::ok) {
      d.ok = false;
      d.disk_failures.emplace_back(job.items[i].sequence_hash, status[i]);
    } else {
      d.disk_bytes += g1_->block_bytes;
    }
  }
}

void onboard_worker::loop() {
  std::unique_lock lk(mtx_);
  for (;;) {
    work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty())
      return; // stopping with nothing left
    onboard_job job = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lk.unlock();
    onboard_done d = run(job);
    lk.lock();
    --running_;
    done_.push_back(std::move(d));
    done_cv_.notify_all();
  }
}

void onboard_worker::submit(onboard_job job) {
  std::unique_lock lk(mtx_);
  ++submitted_;
  if (!thread_.joinable()) {
    lk.unlock();
    onboard_done d = run(job);
    lk.lock();
    done_.push_back(std::move(d));
    return;
  }
  queue_.push_back(std::move(job));
  work_cv_.notify_one();
}

std::vector<onboard_done> onboard_worker::poll() {
  std::lock_guard lk(mtx_);
  submitted_ -= done_.size();
  return std::exchange(done_, {});
}

bool onboard_worker::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mtx_);
  return done_cv_.wait_for(lk, timeout, [&] { return !done_.empty(); }) || !done_.empty();
}

void onboard_worker::drain() {
  std::unique_lock lk(mtx_);
  done_cv_.wait(lk, [&] { return queue_.empty() && running_ == 0; });
}

size_t onboard_worker::in_flight() const {
  std::lock_guard lk(mtx_);
  return submitted_;
}

} // namespace dynamo::kvbm
