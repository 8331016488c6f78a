#include "apps/dynamo-launch/child_server.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <filesystem>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dynamo::apps {

expected<uint16_t> free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return make_error(errc::io_error, "socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok)
    return make_error(errc::io_error, "cannot find a free loopback port");
  return ntohs(a.sin_port);
}

expected<void> still_running(process_set& ps, const std::string& name) {
  ps.poll();
  auto* e = ps.find(name);
  if (e && !e->exit_status)
    return {};
  int st = e && e->exit_status ? *e->exit_status : 0;
  auto how = WIFEXITED(st) ? fmt::format("exit code {}", WEXITSTATUS(st))
                           : fmt::format("signal {}", WTERMSIG(st));
  return make_error(errc::closed, fmt::format("{} exited ({}); see its log above", name, how));
}

expected<void> wait_healthy(process_set& ps, const std::string& name, http::http_client& client,
                            std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto alive = still_running(ps, name); !alive)
      return alive.error();
    auto h = client.request({"GET", "/health", "", ""}, std::chrono::seconds(2));
    if (h && h->status == 200)
      return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return make_error(errc::timeout, fmt::format("{} not healthy within {} s", name, timeout.count()));
}

std::string sibling_binary(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? name : (self.parent_path() / name).string();
}

} // namespace dynamo::apps
