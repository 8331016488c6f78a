#include "tests/support/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>

extern char** environ;

namespace dynamo::test {

std::optional<child_process> child_process::spawn(const std::string& program, const std::vector<std::string>& args,
                                                  std::optional<char> log_prefix) {
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0)
    return std::nullopt;
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::vector<std::string> all{program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (rc != 0) {
    std::cerr << "posix_spawn " << program << ": " << std::strerror(rc) << "\n";
    ::close(to_child[1]);
    ::close(from_child[0]);
    return std::nullopt;
  }
  return child_process{pid, to_child[1], from_child[0], log_prefix};
}

child_process::child_process(child_process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), in_(std::exchange(o.in_, -1)), out_(std::exchange(o.out_, -1)),
      log_prefix_(o.log_prefix_), buffer_(std::move(o.buffer_)) {}

child_process::~child_process() {
  kill_hard();
  if (in_ >= 0)
    ::close(in_);
  if (out_ >= 0)
    ::close(out_);
}

bool child_process::write_line(const std::string& line) {
  const std::string all = line + "\n";
  size_t off = 0;
  while (off < all.size()) {
    const auto n = ::write(in_, all.data() + off, all.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string> child_process::read_line(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (log_prefix_ && !line.empty() && line[0] == *log_prefix_) {
        std::cerr << "peer log: " << line << "\n";
        continue;
      }
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0 || out_ < 0)
      return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc <= 0)
      return std::nullopt;
    char buf[4096];
    const auto n = ::read(out_, buf, sizeof buf);
    if (n <= 0)
      return std::nullopt;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void child_process::kill_hard() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void child_process::signal(int sig) {
  if (pid_ <= 0 || ::kill(pid_, sig) != 0 || sig != SIGSTOP)
    return;
  // kill() returns before the child has stopped: a child busy on another core
  // could still finish what the test meant to catch it in (a flaky
  // stopped_child_receiver_times_out). Wait until it is stopped (or gone),
  // leaving its state to be waited for again (WNOWAIT).
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
}

} // namespace dynamo::test
