#include "apps/dynamo-launch/process_set.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dynamo::apps {

namespace {

using clock = std::chrono::steady_clock;

std::string describe_status(int status) {
  if (WIFEXITED(status))
    return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string{"signal "} + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

} // namespace

void process_set::start(process_entry& e) {
  std::vector<char*> argv;
  for (auto& a : e.spec.argv)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // The child: default signal mask and dispositions, then exec.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (e.spec.die_with_parent && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
      _exit(127); // the parent is already gone
    if (e.spec.stdout_to_stderr)
      dup2(STDERR_FILENO, STDOUT_FILENO);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "process_set: cannot exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  if (pid < 0) {
    spdlog::error("launch: fork for {} failed: {}", e.spec.name, std::strerror(errno));
    e.next_start = clock::now() + std::chrono::seconds(1);
    return;
  }
  e.pid = pid;
  e.started = clock::now();
  spdlog::info("launch: started {} (pid {})", e.spec.name, pid);
}

void process_set::add(process_spec spec) {
  process_entry e;
  e.spec = std::move(spec);
  entries_.push_back(std::move(e));
  start(entries_.back());
}

bool process_set::stop_one(const std::string& group) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->spec.group == group && !it->stopping) {
      it->stopping = true;
      if (it->pid > 0)
        kill(it->pid, SIGTERM);
      spdlog::info("launch: stopping {} (pid {})", it->spec.name, it->pid);
      return true;
    }
  }
  return false;
}

const process_entry* process_set::find(const std::string& name) const {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](auto& e) { return e.spec.name == name; });
  return it == entries_.end() ? nullptr : &*it;
}

size_t process_set::count(const std::string& group) const {
  return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(), [&](const auto& e) {
    return e.spec.group == group && !e.stopping;
  }));
}

void process_set::poll() {
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](auto& e) { return e.pid == pid; });
    if (it == entries_.end())
      continue;
    it->pid = -1;
    if (it->stopping) {
      spdlog::info("launch: {} stopped ({})", it->spec.name, describe_status(status));
      entries_.erase(it);
      continue;
    }
    if (!it->spec.restart) {
      spdlog::warn("launch: {} exited ({})", it->spec.name, describe_status(status));
      it->exit_status = status;
      it->stopping = true;
      continue;
    }
    auto ran = clock::now() - it->started;
    bool error_exit = WIFEXITED(status) && WEXITSTATUS(status) != 0;
    it->failed_starts = error_exit && ran < min_run ? it->failed_starts + 1 : 0;
    if (it->failed_starts >= max_failed_starts) {
      spdlog::error("launch: {} failed to start {} times in a row ({}); not restarting it",
                    it->spec.name, it->failed_starts, describe_status(status));
      if (!failed_start_)
        failed_start_ = it->spec.name + " (" + describe_status(status) + ")";
      it->exit_status = status;
      it->stopping = true;
      continue;
    }
    // Exponential backoff for crash loops; a process that ran a while restarts at once.
    auto delay = ran > std::chrono::seconds(10)
                   ? std::chrono::milliseconds(0)
                   : std::chrono::milliseconds(100) * (1 << std::min(it->restarts, 5u));
    ++it->restarts;
    it->next_start = clock::now() + delay;
    spdlog::warn("launch: {} exited unexpectedly ({}); restart #{} in {} ms", it->spec.name,
                 describe_status(status), it->restarts, delay.count());
  }
  auto now = clock::now();
  for (auto& e : entries_)
    if (e.pid < 0 && !e.stopping && e.next_start <= now)
      start(e);
}

void process_set::stop_all(const std::vector<std::string>& group_order, std::chrono::milliseconds grace) {
  auto wave = [&](const std::string& prefix) {
    bool any = false;
    for (auto& e : entries_) {
      if (e.spec.group.rfind(prefix, 0) != 0)
        continue;
      e.stopping = true;
      if (e.pid > 0) {
        kill(e.pid, SIGTERM);
        any = true;
      }
    }
    auto deadline = clock::now() + grace;
    while (any && clock::now() < deadline) {
      poll();
      any = std::any_of(entries_.begin(), entries_.end(), [&](auto& e) {
        return e.pid > 0 && e.spec.group.rfind(prefix, 0) == 0;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  for (const auto& g : group_order)
    wave(g);
  wave(""); // anything else
  for (auto& e : entries_) {
    if (e.pid > 0) {
      spdlog::warn("launch: {} did not stop in time; killing it", e.spec.name);
      kill(e.pid, SIGKILL);
      waitpid(e.pid, nullptr, 0);
    }
  }
  entries_.clear();
}

} // namespace dynamo::apps
