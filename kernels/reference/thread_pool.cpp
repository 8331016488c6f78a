#include "kernels/reference/thread_pool.hpp"

#include "runtime/core/cpu_relax.hpp"

#include <chrono>

namespace dynamo::kernels::ref {
namespace {

/// How long an idle worker polls for the next job before sleeping. A decode
/// step issues ~150 jobs a few tens of microseconds apart.
constexpr auto spin_budget = std::chrono::microseconds(300);

} // namespace

thread_pool::thread_pool(unsigned n_threads) {
  if (n_threads == 0) n_threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(n_threads - 1);
  for (unsigned i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

thread_pool::~thread_pool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  wake_sleepers();
  for (auto& t : workers_) t.join();
}

void thread_pool::run(uint32_t n_tasks, task_fn fn, void* ctx) {
  if (n_tasks == 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (uint32_t t = 0; t < n_tasks; ++t) fn(ctx, t);
    return;
  }
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  n_tasks_.store(n_tasks, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  claim_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);
  generation_.store(gen, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_sleepers();

  drain(gen);
  for (unsigned spins = 0; done_.load(std::memory_order_acquire) != n_tasks; ++spins) {
    if (spins < 256) {
      cpu_relax();
    } else {
      std::this_thread::yield(); // a worker holding a task was descheduled
    }
  }
}

void thread_pool::wake_sleepers() {
  { const std::lock_guard lock(sleep_mutex_); } // a sleeper is either waiting or sees the new generation
  sleep_cv_.notify_all();
}

void thread_pool::drain(uint32_t gen) {
  const task_fn fn = fn_.load(std::memory_order_relaxed);
  void* const ctx = ctx_.load(std::memory_order_relaxed);
  const uint32_t n_tasks = n_tasks_.load(std::memory_order_relaxed);
  uint64_t cur = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(cur >> 32) != gen) return;       // a newer job started
    if (static_cast<uint32_t>(cur) >= n_tasks) return;         // nothing left
    if (!claim_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) continue;
    // A successful claim under `gen` means the job is still live, so the
    // fields loaded above belong to it.
    fn(ctx, static_cast<uint32_t>(cur));
    done_.fetch_add(1, std::memory_order_release);
    cur = claim_.load(std::memory_order_acquire);
  }
}

void thread_pool::worker_loop() {
  // Not generation_.load(): a thread that starts late must still see every
  // generation published since construction (the destructor's included).
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      // Poll with pause for a few microseconds (jobs of one step come back to
      // back), then with yield (on a shared machine the core goes to whoever
      // needs it), then sleep.
      const auto start = std::chrono::steady_clock::now();
      for (unsigned i = 0; gen == seen; ++i) {
        if (i < 2048) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
        gen = generation_.load(std::memory_order_acquire);
        if ((i & 63) == 63 && std::chrono::steady_clock::now() - start > spin_budget) break;
      }
      if (gen == seen) {
        // Dekker with run(): we publish sleepers_ before re-reading the
        // generation; run() publishes the generation before reading sleepers_.
        std::unique_lock lock(sleep_mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        sleep_cv_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        gen = generation_.load(std::memory_order_acquire);
      }
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    drain(gen);
  }
}

} // namespace dynamo::kernels::ref
