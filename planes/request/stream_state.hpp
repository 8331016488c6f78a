// Server-side stream machinery shared by the ZeroMQ and in-process request
// planes: the open -> finished | cancelled state machine with its cancel
// callbacks, and the one response_stream class that forwards to a transport
// "sink". Internal to planes/request. Thread-safe.
#pragma once

#include "planes/request/request_plane.hpp"

#include <mutex>
#include <vector>

namespace dynamo::planes::detail {

class stream_state {
public:
  /// open -> closed (finished or failed); true when this call made the transition.
  [[nodiscard]] bool close();
  /// open -> cancelled; runs the callbacks on this thread, outside the lock.
  /// True when this call made the transition.
  bool cancel();
  [[nodiscard]] bool is_open() const;
  [[nodiscard]] bool cancelled() const;
  /// Runs `fn` now when already cancelled; keeps it while open; drops it otherwise.
  void on_cancel(std::function<void()> fn);

private:
  enum class status { open, closed, cancelled };
  mutable std::mutex mutex_;
  status status_ = status::open;
  std::vector<std::function<void()>> callbacks_;
};

/// Where a stream's output goes: a transport implements it.
class stream_sink {
public:
  virtual ~stream_sink() = default;
  /// Queues an item for the I/O thread; false when the transport is shut down.
  [[nodiscard]] virtual bool deliver_item(bytes item) = 0;
  /// Queues the end (empty error: finished).
  virtual void deliver_end(const caf::error& err) = 0;
};

class basic_response_stream final : public response_stream {
public:
  basic_response_stream(std::shared_ptr<stream_state> state, std::unique_ptr<stream_sink> sink,
                        size_t max_item_bytes);
  ~basic_response_stream() override;

  [[nodiscard]] bool send(bytes item) override;
  void finish() override;
  void fail(const caf::error& err) override;
  [[nodiscard]] bool cancelled() const override;
  void on_cancel(std::function<void()> fn) override;

private:
  std::shared_ptr<stream_state> state_;
  std::unique_ptr<stream_sink> sink_;
  size_t max_item_bytes_;
};

} // namespace dynamo::planes::detail
