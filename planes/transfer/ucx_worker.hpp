// One UCP context + worker and the progress thread that owns it, shared by the ucx
// sender and receiver. Setup (mem_map, handlers) happens before start(); after that
// only the progress thread touches the worker. post() is thread-safe; the
// destructor stops the thread (running the shutdown hook on it) and then destroys.
#pragma once

#include "planes/transfer/kv_transport.hpp"
#include "planes/transfer/socket_util.hpp"
#include "planes/transfer/transfer_common.hpp"

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dynamo::planes::transfer_detail {

/// Active message ids: data frames + payload (sender -> receiver), control frames
/// done / done_rma / cancel (sender -> receiver), acks (receiver -> sender).
inline constexpr unsigned am_data = 41, am_ctrl = 42, am_ack = 43;

/// The errc a UCX status maps to (timeouts, cancellations, lost peers, other I/O).
[[nodiscard]] errc ucx_errc(ucs_status_t status) noexcept;

/// "what: <UCX status text>" as an error value.
[[nodiscard]] caf::error ucx_error(ucs_status_t status, const std::string& what);

/// ucp_ep_print_info captured as text.
[[nodiscard]] std::string ucx_ep_info(ucp_ep_h ep);

class ucx_worker {
public:

  struct hooks {
    std::function<void(clock::time_point)> tick;     ///< every loop turn (deadlines)
    std::function<clock::time_point()> next_wake;    ///< when tick must run next
    std::function<void()> shutdown;                  ///< last thing on the thread
  };

  /// A context with RMA + AM + WAKEUP configured from `options` (TLS and
  /// MM_ERROR_HANDLING apply to this context only, not the process).
  [[nodiscard]] static expected<std::unique_ptr<ucx_worker>> create(const ucx_transport_options& options);
  ~ucx_worker();
  ucx_worker(const ucx_worker&) = delete;
  ucx_worker& operator=(const ucx_worker&) = delete;

  [[nodiscard]] ucp_context_h context() const noexcept { return context_; }
  [[nodiscard]] ucp_worker_h worker() const noexcept { return worker_; }

  /// Starts the progress thread. Call once, after setup.
  void start(hooks h);
  /// Stops and joins the thread (idempotent); the destructor calls it. Owners call it
  /// first so that the shutdown hook runs while they are whole.
  void stop();
  /// Runs `fn` on the progress thread; false when it is stopping (fn not run).
  bool post(std::function<void()> fn);
  struct mapped {
    ucp_mem_h memh = nullptr;
    void* base = nullptr;
  };
  /// Registers the memory [base, base + length) with this context; with a null
  /// base, UCX allocates `length` bytes (shared memory where its memory domains
  /// allow, so same-host peers can map them). Unmapped with the context.
  [[nodiscard]] expected<mapped> map(void* base, uint64_t length);

private:
  ucx_worker() = default;
  void run();
  void run_tasks();
  void idle_wait();

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int worker_fd_ = -1;
  std::chrono::microseconds spin_{0};
  wake_fd wake_;
  hooks hooks_;
  std::mutex mutex_;
  std::vector<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<ucp_mem_h> maps_;
  std::thread thread_;
};

} // namespace dynamo::planes::transfer_detail
