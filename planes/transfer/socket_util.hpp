// Small POSIX socket helpers for the tcp transport: an owned fd, an eventfd to wake
// a poll loop, a non-blocking listener and a non-blocking connect. Called by
// planes/transfer only. Each object is used by one thread, except wake_fd::signal
// (thread-safe).
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace dynamo::planes::transfer_detail {

class unique_fd {
public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept;
  ~unique_fd();
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  void reset() noexcept;

private:
  int fd_ = -1;
};

/// An eventfd: signal() from any thread wakes a poll() on fd(); drain() re-arms it.
class wake_fd {
public:
  wake_fd();
  [[nodiscard]] bool valid() const noexcept { return fd_.valid(); }
  [[nodiscard]] int fd() const noexcept { return fd_.get(); }
  void signal() noexcept;
  void drain() noexcept;

private:
  unique_fd fd_;
};

/// A non-blocking TCP listener on host:port (0 = any port); `bound_port` gets the port.
[[nodiscard]] expected<unique_fd> listen_tcp(const std::string& host, uint16_t port,
                                             uint16_t& bound_port);

/// A non-blocking connect to host:port (numeric or a name): in progress or done.
[[nodiscard]] expected<unique_fd> connect_tcp(const std::string& host, uint16_t port);

/// TCP_NODELAY plus send/receive buffers of `buffer_bytes` (0 = leave the default).
void tune_socket(int fd, int buffer_bytes) noexcept;

/// errno as text.
[[nodiscard]] std::string errno_text(int err);

} // namespace dynamo::planes::transfer_detail
