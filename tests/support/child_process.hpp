// A test's child process with pipes on its stdin and stdout: line-oriented
// requests and replies to a helper binary, SIGKILLed (and reaped) when the
// object dies. Used by the plane test suites' peers. One owner thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::test {

class child_process {
public:
  /// Starts `program` with `args`. Stdout lines starting with `log_prefix`
  /// (when given) are the child's own log, not replies: read_line copies them
  /// to stderr and skips them. nullopt (reason on stderr) when it cannot start.
  [[nodiscard]] static std::optional<child_process> spawn(const std::string& program,
                                                          const std::vector<std::string>& args,
                                                          std::optional<char> log_prefix = std::nullopt);
  child_process(child_process&& o) noexcept;
  child_process& operator=(child_process&&) = delete;
  ~child_process();

  [[nodiscard]] bool write_line(const std::string& line);
  /// The next stdout line (without '\n'), or nullopt at EOF or after `timeout`.
  [[nodiscard]] std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::seconds{20});
  /// SIGKILL and reap. Idempotent.
  void kill_hard();
  /// Sends `sig` (SIGSTOP / SIGCONT, say) to the child; SIGSTOP returns once
  /// the child has stopped.
  void signal(int sig);

private:
  child_process(pid_t pid, int in, int out, std::optional<char> log_prefix)
      : pid_(pid), in_(in), out_(out), log_prefix_(log_prefix) {}
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::optional<char> log_prefix_;
  std::string buffer_;
};

} // namespace dynamo::test
