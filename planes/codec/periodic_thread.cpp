#include "planes/codec/periodic_thread.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::planes {

periodic_thread::periodic_thread(std::string name, std::chrono::milliseconds period,
                                 std::function<void()> fn)
    : name_(std::move(name)), period_(period), fn_(std::move(fn)) {
  thread_ = std::thread([this] { run(); });
}

periodic_thread::~periodic_thread() {
  {
    std::lock_guard lock{mutex_};
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void periodic_thread::wake() {
  {
    std::lock_guard lock{mutex_};
    woken_ = true;
  }
  cv_.notify_one();
}

bool periodic_thread::on_thread() const noexcept {
  return std::this_thread::get_id() == id_.load();
}

void periodic_thread::run() {
  id_ = std::this_thread::get_id();
  auto next = std::chrono::steady_clock::now() + period_;
  std::unique_lock lock{mutex_};
  for (;;) {
    cv_.wait_until(lock, next, [this] { return stop_ || woken_; });
    if (stop_)
      return;
    woken_ = false;
    lock.unlock();
    try {
      fn_();
    } catch (const std::exception& e) {
      spdlog::error("{}: periodic task threw: {}", name_, e.what());
    }
    lock.lock();
    auto now = std::chrono::steady_clock::now();
    if (now >= next)
      next = now + period_;
  }
}

} // namespace dynamo::planes
