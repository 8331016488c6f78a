// One thread running posted tasks in order: the "I/O thread" of the in-process
// plane fakes, so their callbacks run off the caller's thread like the ZeroMQ
// implementations' do. post() is thread-safe; stop() must not be called from a task.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dynamo::planes {

class serial_executor {
public:
  using task = std::function<void()>;

  /// Starts the thread; `name` is used in log lines.
  explicit serial_executor(std::string name);
  /// Runs the tasks already queued, then joins (stop()).
  ~serial_executor();

  serial_executor(const serial_executor&) = delete;
  serial_executor& operator=(const serial_executor&) = delete;

  /// Queues `fn`; false (and `fn` dropped) once stopped. Exceptions thrown by a
  /// task are logged and swallowed.
  [[nodiscard]] bool post(task fn);

  /// Refuses new tasks, runs the queued ones, joins. Idempotent.
  void stop();

  /// True on the executor's own thread.
  [[nodiscard]] bool in_executor() const noexcept;

private:
  void run();

  std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<task> queue_;
  bool stopping_ = false;
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
};

} // namespace dynamo::planes
