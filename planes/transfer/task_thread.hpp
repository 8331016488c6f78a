// A thread that runs posted tasks in order: the progress thread of the inproc and
// cuda-ipc transports. Tasks still queued when the thread stops run with
// cancelled = true, so every callback fires exactly once. post() is thread-safe;
// the destructor stops and joins (never destroy it from one of its tasks).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace dynamo::planes::transfer_detail {

class task_thread {
public:
  using task = std::function<void(bool cancelled)>;

  task_thread();
  ~task_thread();
  task_thread(const task_thread&) = delete;
  task_thread& operator=(const task_thread&) = delete;

  void post(task t);
  /// True while stopping: long tasks poll it to give up early.
  [[nodiscard]] bool stopping() const;

private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<task> queue_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace dynamo::planes::transfer_detail
