#include "runtime/kvbm/onboard_worker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dynamo::kvbm {

onboard_worker::onboard_worker(std::optional<g1_view> g1, bool threaded) : g1_(g1) {
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
  // Open every file first and tell the kernel all of them are wanted, so the
  // device serves them concurrently rather than one small read at a time.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int> fds(job.items.size(), -1);
  std::vector<int> open_errno(job.items.size(), 0);
  bool any_disk = false;
  for (size_t i = 0; i < job.items.size(); ++i) {
    if (job.items[i].slab)
      continue;
    any_disk = true;
    fds[i] = ::open(job.items[i].path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fds[i] < 0)
      open_errno[i] = errno;
    else
      (void)::posix_fadvise(fds[i], 0, 0, POSIX_FADV_WILLNEED);
  }
  for (size_t i = 0; i < job.items.size(); ++i) {
    const onboard_item& it = job.items[i];
    if (it.destination >= g1_->num_blocks) { // a connector bug; never write out of bounds
      d.ok = false;
      continue;
    }
    const std::span<std::byte> dst = g1_->block(it.destination);
    if (it.slab) {
      if (it.slab->size() != dst.size()) {
        d.ok = false;
        continue;
      }
      std::memcpy(dst.data(), it.slab->data(), dst.size());
      continue;
    }
    const read_status s = fds[i] < 0 ? (open_errno[i] == ENOENT ? read_status::missing : read_status::corrupt)
                                     : read_block_fd(fds[i], it.sequence_hash, dst);
    if (s != read_status::ok) {
      d.ok = false;
      d.disk_failures.emplace_back(it.sequence_hash, s);
    } else {
      d.disk_bytes += dst.size();
    }
  }
  for (int fd : fds)
    if (fd >= 0)
      ::close(fd);
  if (any_disk)
    d.disk_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
