#include "planes/transfer/socket_util.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dynamo::planes::transfer_detail {

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

unique_fd::~unique_fd() {
  reset();
}

void unique_fd::reset() noexcept {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

wake_fd::wake_fd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

void wake_fd::signal() noexcept {
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd_.get(), &one, sizeof one);
}

void wake_fd::drain() noexcept {
  uint64_t value = 0;
  [[maybe_unused]] auto n = ::read(fd_.get(), &value, sizeof value);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

namespace {

struct addrinfo_list {
  addrinfo* head = nullptr;
  ~addrinfo_list() {
    if (head)
      ::freeaddrinfo(head);
  }
};

expected<void> resolve(const std::string& host, uint16_t port, bool passive, addrinfo_list& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  auto service = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out.head);
  if (rc != 0 || out.head == nullptr)
    return make_error(errc::invalid_argument,
                      fmt::format("cannot resolve '{}': {}", host, ::gai_strerror(rc)));
  return {};
}

} // namespace

expected<unique_fd> listen_tcp(const std::string& host, uint16_t port, uint16_t& bound_port) {
  addrinfo_list list;
  if (auto ok = resolve(host, port, true, list); !ok)
    return ok.error();
  std::string last = "no address";
  for (auto* ai = list.head; ai; ai = ai->ai_next) {
    unique_fd fd{::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    if (!fd.valid())
      continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), 64) != 0) {
      last = errno_text(errno);
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    bound_port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return fd;
  }
  return make_error(errc::io_error, fmt::format("cannot listen on {}:{}: {}", host, port, last));
}

expected<unique_fd> connect_tcp(const std::string& host, uint16_t port) {
  addrinfo_list list;
  if (auto ok = resolve(host, port, false, list); !ok)
    return ok.error();
  std::string last = "no address";
  for (auto* ai = list.head; ai; ai = ai->ai_next) {
    unique_fd fd{::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    if (!fd.valid())
      continue;
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS)
      return fd;
    last = errno_text(errno);
  }
  return make_error(errc::disconnected, fmt::format("cannot connect to {}:{}: {}", host, port, last));
}

void tune_socket(int fd, int buffer_bytes) noexcept {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (buffer_bytes > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
  }
}

} // namespace dynamo::planes::transfer_detail
