#include "planes/transfer/task_thread.hpp"

namespace dynamo::planes::transfer_detail {

task_thread::task_thread() : thread_([this] { run(); }) {}

task_thread::~task_thread() {
  {
    std::lock_guard lock{mutex_};
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void task_thread::post(task t) {
  {
    std::lock_guard lock{mutex_};
    if (!stop_) {
      queue_.push_back(std::move(t));
      cv_.notify_all();
      return;
    }
  }
  t(true); // posted during shutdown: cancelled at once, on the caller's thread
}

bool task_thread::stopping() const {
  std::lock_guard lock{mutex_};
  return stop_;
}

void task_thread::run() {
  for (;;) {
    task t;
    bool cancelled = false;
    {
      std::unique_lock lock{mutex_};
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      t = std::move(queue_.front());
      queue_.pop_front();
      cancelled = stop_;
    }
    t(cancelled);
  }
}

} // namespace dynamo::planes::transfer_detail
