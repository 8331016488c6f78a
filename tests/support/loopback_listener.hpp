// A loopback TCP socket bound to a free port that listens but never accepts:
// a host that hangs (connections complete into the backlog, requests go
// unanswered) or, with backlog 0 and the queue filled, one whose connects hang.
// Header-only; for suites that test timeouts and cancellation. One thread.
#pragma once

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace dynamo::test {

struct loopback_listener {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  uint16_t port = 0;

  explicit loopback_listener(int backlog = 4) {
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    BOOST_REQUIRE(::listen(fd, backlog) == 0);
    socklen_t len = sizeof addr;
    BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~loopback_listener() { ::close(fd); }
  loopback_listener(const loopback_listener&) = delete;
  loopback_listener& operator=(const loopback_listener&) = delete;
};

} // namespace dynamo::test
