#include "support.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace dynamo::planes::testing {

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end)
      return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

temp_dir::temp_dir() {
  std::string tmpl = "/tmp/dynamo-planes-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error(std::string{"mkdtemp: "} + std::strerror(errno));
  path_ = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::optional<peer_process> peer_process::spawn(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0)
    return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<std::string> all{DYNAMO_PLANES_PEER};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, DYNAMO_PLANES_PEER, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    spdlog::error("posix_spawn {}: {}", DYNAMO_PLANES_PEER, std::strerror(rc));
    ::close(fds[0]);
    return std::nullopt;
  }
  return peer_process{pid, fds[0]};
}

peer_process::peer_process(peer_process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)),
      buffer_(std::move(other.buffer_)) {}

peer_process::~peer_process() {
  kill_hard();
  if (fd_ >= 0)
    ::close(fd_);
}

std::optional<std::string> peer_process::read_line(std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0 || fd_ < 0)
      return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc <= 0)
      return std::nullopt;
    char buf[256];
    auto n = ::read(fd_, buf, sizeof buf);
    if (n <= 0)
      return std::nullopt;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void peer_process::kill_hard() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

item_callback call_recorder::on_item() {
  return [r = r_](bytes item) {
    std::lock_guard lock{r->mutex};
    if (r->end)
      r->item_after_end = true;
    r->items.push_back(to_string(item));
    r->cv.notify_all();
  };
}

end_callback call_recorder::on_end() {
  return [r = r_](const caf::error& err) {
    std::lock_guard lock{r->mutex};
    ++r->end_count;
    r->end = err;
    r->cv.notify_all();
  };
}

bool call_recorder::wait_end(std::chrono::milliseconds deadline) {
  std::unique_lock lock{r_->mutex};
  return r_->cv.wait_for(lock, deadline, [&] { return r_->end.has_value(); });
}

bool call_recorder::wait_items(size_t n, std::chrono::milliseconds deadline) {
  std::unique_lock lock{r_->mutex};
  return r_->cv.wait_for(lock, deadline, [&] { return r_->items.size() >= n; });
}

std::vector<std::string> call_recorder::items() const {
  std::lock_guard lock{r_->mutex};
  return r_->items;
}

bool call_recorder::ended() const {
  std::lock_guard lock{r_->mutex};
  return r_->end.has_value();
}

caf::error call_recorder::error() const {
  std::lock_guard lock{r_->mutex};
  return r_->end ? *r_->end : caf::error{};
}

int call_recorder::end_count() const {
  std::lock_guard lock{r_->mutex};
  return r_->end_count;
}

bool call_recorder::item_after_end() const {
  std::lock_guard lock{r_->mutex};
  return r_->item_after_end;
}

bytes to_bytes(const std::string& s) {
  return bytes(s.begin(), s.end());
}

std::string to_string(const bytes& b) {
  return std::string(b.begin(), b.end());
}

} // namespace dynamo::planes::testing
