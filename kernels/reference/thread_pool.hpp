// A small persistent thread pool for the CPU kernels: parallel_for over task
// indices, with the calling thread taking tasks too. Workers spin briefly
// between jobs (a forward pass issues hundreds of short jobs), then sleep.
// Driven by one thread at a time (the executor's step thread); not reentrant.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace dynamo::kernels::ref {

class thread_pool {
public:
  /// `n_threads` counts the caller: 1 runs everything inline, 0 means
  /// std::thread::hardware_concurrency().
  explicit thread_pool(unsigned n_threads = 0);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Threads that run tasks, the caller included.
  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()) + 1; }

  /// Calls fn(task) once for every task in [0, n_tasks), spread over the pool;
  /// returns when all calls have returned. Tasks are claimed dynamically, so a
  /// descheduled thread delays only its own task. `fn` must not throw.
  template <class Fn>
  void parallel_for(uint32_t n_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    auto trampoline = [](void* ctx, uint32_t task) { (*static_cast<F*>(ctx))(task); };
    run(n_tasks, trampoline, const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }

private:
  using task_fn = void (*)(void*, uint32_t);
  void run(uint32_t n_tasks, task_fn fn, void* ctx);
  void worker_loop();
  /// Claims and runs tasks of generation `gen` until none is left.
  void drain(uint32_t gen);
  void wake_sleepers();

  std::vector<std::thread> workers_;
  // The current job. `claim_` packs (generation << 32 | next task index) so a
  // late worker can never claim a task of a newer job with stale fields.
  std::atomic<task_fn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<uint32_t> n_tasks_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint32_t> done_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
};

} // namespace dynamo::kernels::ref
