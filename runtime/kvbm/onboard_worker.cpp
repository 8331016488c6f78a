#include "runtime/kvbm/onboard_worker.hpp"

#include <cstring>

namespace dynamo::kvbm {

onboard_worker::onboard_worker(std::optional<g1_view> g1, bool threaded, unsigned disk_readers) : g1_(g1) {
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
  onboard_done d{job.request_id, true, {}, 0, 0};
  if (!g1_)
    return d;
  // Host slabs are copied here; disk items are only collected, then read
  // several files at a time: one small file after another keeps a single
  // request in flight at the device, far below its sequential speed.
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
  if (disk_items.empty())
    return d;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<read_status> status(disk_items.size(), read_status::ok);
  auto read_one = [&](uint32_t k) {
    const onboard_item& it = job.items[disk_items[k]];
    status[k] = read_block_file(it.path, it.sequence_hash, g1_->block(it.destination));
  };
  if (readers_ && disk_items.size() > 1)
    readers_->parallel_for(static_cast<uint32_t>(disk_items.size()), read_one);
  else
    for (uint32_t k = 0; k < disk_items.size(); ++k)
      read_one(k);
  d.disk_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t k = 0; k < disk_items.size(); ++k) {
    const onboard_item& it = job.items[disk_items[k]];
    if (status[k] != read_status::ok) {
      d.ok = false;
      d.disk_failures.emplace_back(it.sequence_hash, status[k]);
    } else {
      d.disk_bytes += g1_->block(it.destination).size();
    }
  }
  return d;
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
