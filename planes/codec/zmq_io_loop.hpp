// The thread that owns a plane object's ZeroMQ sockets (they are not thread-safe):
// post() queues a task and wakes the loop through an inproc PAIR socket. Used by
// the ZMQ request plane and event subscriber. watch/set_* before start(), later
// only on the loop thread; post/call/stop from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace dynamo::planes {

/// The process-wide ZeroMQ context, alive while any plane object holds it.
[[nodiscard]] std::shared_ptr<zmq::context_t> shared_zmq_context();

/// A unique "inproc://dynamo-<what>-<n>" endpoint name.
[[nodiscard]] std::string unique_inproc_endpoint(const char* what);

class zmq_io_loop {
public:
  using task = std::function<void()>;

  /// `tick`: period of the tick callback and the longest poll wait.
  zmq_io_loop(std::string name, std::chrono::milliseconds tick);
  /// stop() + join.
  ~zmq_io_loop();

  zmq_io_loop(const zmq_io_loop&) = delete;
  zmq_io_loop& operator=(const zmq_io_loop&) = delete;

  [[nodiscard]] zmq::context_t& context() noexcept { return *ctx_; }

  /// Starts the thread. Call once, after the configuration calls below.
  void start();

  /// Queues `fn` for the loop thread; false once the loop has shut down.
  [[nodiscard]] bool post(task fn);

  /// Runs `fn` on the loop thread and waits for its result (inline when
  /// already on it); errc::closed when the loop has shut down.
  template <class T>
  [[nodiscard]] expected<T> call(std::function<expected<T>()> fn);

  /// Stops polling, runs the queued tasks, then the on_stop callback, and joins.
  /// Idempotent; never call it from the loop thread.
  void stop();

  /// True on the loop thread.
  [[nodiscard]] bool in_loop() const noexcept;

  /// Calls `on_readable` whenever `s` has input (the callback drains it).
  void watch(zmq::socket_t& s, std::function<void()> on_readable);
  void unwatch(zmq::socket_t& s);
  void set_tick(std::function<void()> fn) { tick_fn_ = std::move(fn); }
  /// Last thing the loop thread does: close the owner's sockets here.
  void set_on_stop(std::function<void()> fn) { stop_fn_ = std::move(fn); }

private:
  struct watched {
    uint64_t id;
    zmq::socket_t* socket;
    std::function<void()> on_readable;
  };

  void run();
  void poll_once(std::chrono::milliseconds timeout);
  void run_tasks();
  void drain_wake();
  static void guarded(const char* what, const std::string& name, const task& fn);

  std::string name_;
  std::chrono::milliseconds tick_;
  std::shared_ptr<zmq::context_t> ctx_;
  zmq::socket_t wake_rx_;
  std::vector<watched> watched_;
  uint64_t next_watch_id_ = 1;
  std::function<void()> tick_fn_;
  std::function<void()> stop_fn_;

  std::mutex mutex_; // guards queue_, wake_tx_, wake_pending_, closed_
  std::vector<task> queue_;
  zmq::socket_t wake_tx_;
  bool wake_pending_ = false;
  bool closed_ = false;
  bool stop_requested_ = false;
  std::atomic<std::thread::id> loop_id_{};
  std::thread thread_;
};

template <class T>
expected<T> zmq_io_loop::call(std::function<expected<T>()> fn) {
  if (in_loop())
    return fn();
  auto done = std::make_shared<std::promise<expected<T>>>();
  auto result = done->get_future();
  bool queued = post([done, f = std::move(fn)] {
    try {
      done->set_value(f());
    } catch (const std::exception& e) {
      done->set_value(make_error(errc::internal, e.what()));
    }
  });
  if (!queued)
    return make_error(errc::closed, "plane I/O loop is shut down");
  return result.get();
}

/// A read-only view of a contiguous byte container, for send_parts.
template <class C>
[[nodiscard]] zmq::const_buffer view(const C& c) noexcept {
  return zmq::const_buffer{c.data(), c.size()};
}

/// Outcome of a non-blocking multipart send.
enum class send_status { sent, would_block, unreachable };

/// Sends `parts` as one multipart message without blocking. A peer that a
/// ROUTER_MANDATORY socket does not know gives `unreachable`; never throws.
[[nodiscard]] send_status send_parts(zmq::socket_t& s, std::span<const zmq::const_buffer> parts);

/// Receives one multipart message without blocking. False when none is waiting.
/// More than `max_parts` frames: the rest are read and dropped and `overflow`
/// is set (the caller counts the message as malformed). Never throws.
[[nodiscard]] bool recv_parts(zmq::socket_t& s, std::vector<zmq::message_t>& out, size_t max_parts,
                              bool& overflow);

/// One event from a socket monitor (ZMQ_EVENT_*).
struct monitor_event {
  uint16_t event = 0;
  uint32_t value = 0;
  std::string address;
};

/// Monitors `target` for `events` and returns the PAIR socket that receives the
/// event messages (watch it on the loop). errc::io_error when libzmq refuses.
[[nodiscard]] expected<zmq::socket_t> start_monitor(zmq::context_t& ctx, zmq::socket_t& target,
                                                    int events);

/// Reads one pending monitor event without blocking.
[[nodiscard]] std::optional<monitor_event> read_monitor_event(zmq::socket_t& monitor);

/// Stops monitoring `target` (call before closing the monitor socket).
void stop_monitor(zmq::socket_t& target) noexcept;

} // namespace dynamo::planes
