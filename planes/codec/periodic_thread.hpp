// A thread that runs one function every `period` (and at once after wake()),
// used by the discovery plane for lease keep-alives and watch polling.
// wake() is thread-safe; the destructor stops and joins (never call it from `fn`).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dynamo::planes {

class periodic_thread {
public:
  periodic_thread(std::string name, std::chrono::milliseconds period, std::function<void()> fn);
  ~periodic_thread();

  periodic_thread(const periodic_thread&) = delete;
  periodic_thread& operator=(const periodic_thread&) = delete;

  /// Runs `fn` as soon as possible (coalesced with other wakes).
  void wake();
  /// True on this thread.
  [[nodiscard]] bool on_thread() const noexcept;

private:
  void run();

  std::string name_;
  std::chrono::milliseconds period_;
  std::function<void()> fn_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  std::atomic<std::thread::id> id_{};
  std::thread thread_;
};

} // namespace dynamo::planes
