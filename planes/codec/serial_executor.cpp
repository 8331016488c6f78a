#include "planes/codec/serial_executor.hpp"

#include <spdlog/spdlog.h>

#include <exception>

namespace dynamo::planes {

serial_executor::serial_executor(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] { run(); });
}

serial_executor::~serial_executor() {
  stop();
}

bool serial_executor::post(task fn) {
  {
    std::lock_guard lock{mutex_};
    if (stopping_)
      return false;
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
  return true;
}

void serial_executor::stop() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable() && !in_executor())
    thread_.join();
}

bool serial_executor::in_executor() const noexcept {
  return std::this_thread::get_id() == thread_id_.load();
}

void serial_executor::run() {
  thread_id_ = std::this_thread::get_id();
  std::unique_lock lock{mutex_};
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return; // stopping and drained
    auto fn = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      fn();
    } catch (const std::exception& e) {
      spdlog::error("{}: task threw: {}", name_, e.what());
    } catch (...) {
      spdlog::error("{}: task threw a non-standard exception", name_);
    }
    fn = nullptr; // release captures outside the lock
    lock.lock();
  }
}

} // namespace dynamo::planes
