// The request plane's contract: RPC with streamed responses (frontend -> router
// -> worker); ZeroMQ (zmq_request_plane.hpp) and in-process (inproc_request_plane.hpp)
// implementations. Every method is thread-safe; callbacks (handlers, on_item,
// on_end, on_cancel) run on the implementation's I/O thread and must not block.
#pragma once

#include "planes/codec/wire.hpp"
#include "runtime/core/error.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace dynamo::planes {

/// Server side of one call. Thread-safe: handlers hand it to any thread.
/// States: open -> finished | failed | cancelled. Dropping the last reference
/// while open fails the stream with errc::internal ("handler dropped the stream").
class response_stream {
public:
  virtual ~response_stream() = default;
  /// Queues one item; false once the stream is not open (cancelled, finished,
  /// failed, server closed) or the item exceeds the size limit (the stream is
  /// then failed with errc::invalid_argument). Never blocks.
  [[nodiscard]] virtual bool send(bytes item) = 0;
  /// Ends the stream successfully. Idempotent; ignored once not open.
  virtual void finish() = 0;
  /// Ends the stream with `err` (delivered to the caller's on_end). Ignored once not open.
  virtual void fail(const caf::error& err) = 0;
  /// True once the caller cancelled, the caller died, or the server shut down.
  [[nodiscard]] virtual bool cancelled() const = 0;
  /// Runs `fn` once on cancellation (at once, on this thread, if already
  /// cancelled; never if the stream ends otherwise).
  virtual void on_cancel(std::function<void()> fn) = 0;
};

using response_stream_ptr = std::shared_ptr<response_stream>;

/// Serves one endpoint path. Runs on the server's I/O thread: hand work off.
using request_handler = std::function<void(bytes request, response_stream_ptr stream)>;

/// Heartbeats and limits, shared by clients and servers (defaults as Dynamo's TCP plane).
struct request_plane_timing {
  std::chrono::milliseconds heartbeat_interval{250}; ///< client ping while streams are open
  std::chrono::milliseconds peer_timeout{1500};      ///< silence after which a peer is dead
  std::chrono::milliseconds connect_timeout{3000};   ///< client: no connection by then -> fail
  std::chrono::milliseconds idle_timeout{30000};     ///< client: close a connection unused this long
  std::chrono::milliseconds tick{50};                ///< I/O loop timer granularity
  size_t max_message_bytes = default_max_message_bytes;
};

class request_server {
public:
  virtual ~request_server() = default;
  /// Routes calls for `endpoint_path` (e.g. "dynamo/backend/generate") to `handler`.
  /// errc::invalid_argument when the path is empty or already served.
  [[nodiscard]] virtual expected<void> serve(const std::string& endpoint_path,
                                             request_handler handler) = 0;
  /// Stops routing `endpoint_path`; open streams continue. False when not served.
  virtual bool unserve(const std::string& endpoint_path) = 0;
  /// The address clients call (the real one, after port 0 was resolved).
  [[nodiscard]] virtual std::string address() const = 0;
  /// Frames dropped because they did not parse.
  [[nodiscard]] virtual uint64_t malformed_count() const = 0;
  /// Streams currently open (handlers not yet finished).
  [[nodiscard]] virtual size_t open_streams() const = 0;
};

/// Called for each response item, in order, on the client's I/O thread.
using item_callback = std::function<void(bytes item)>;
/// Called exactly once per call, last; an empty error means finished cleanly.
using end_callback = std::function<void(const caf::error& err)>;

/// Cancels one call. Copyable; dropping it does not cancel the call.
class call_handle {
public:
  struct control {
    virtual ~control() = default;
    virtual void cancel() = 0;
  };

  call_handle() = default;
  call_handle(uint64_t id, std::shared_ptr<control> ctl) : id_(id), ctl_(std::move(ctl)) {}

  /// Asks the server to stop (its on_cancel runs) and ends the call locally with
  /// errc::cancelled unless it already ended. Idempotent; any thread.
  void cancel() const {
    if (ctl_)
      ctl_->cancel();
  }
  /// Stream id on the wire (unique per client).
  [[nodiscard]] uint64_t id() const noexcept { return id_; }

private:
  uint64_t id_ = 0;
  std::shared_ptr<control> ctl_;
};

class request_client {
public:
  virtual ~request_client() = default;
  /// Starts a call. Every outcome arrives through on_end (exactly once): not
  /// served -> errc::not_found; request over the size limit -> invalid_argument;
  /// server gone or unreachable -> disconnected; cancel() -> cancelled; client
  /// destroyed first -> closed. Never blocks.
  [[nodiscard]] virtual call_handle call(const std::string& address,
                                         const std::string& endpoint_path, bytes request,
                                         item_callback on_item, end_callback on_end) = 0;
  /// Frames dropped because they did not parse.
  [[nodiscard]] virtual uint64_t malformed_count() const = 0;
  /// Calls not yet ended.
  [[nodiscard]] virtual size_t open_calls() const = 0;
};

} // namespace dynamo::planes
