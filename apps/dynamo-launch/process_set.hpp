// A table of child processes: starts them (fork + exec), restarts those that
// exit unexpectedly with a backoff (or records the exit, for one-shot
// children), and stops them gracefully (SIGTERM, then SIGKILL after a grace
// period). Used by dynamo-launch's and dynamo-disagg-bench's main threads
// only; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dynamo::apps {

struct process_spec {
  std::string name;              ///< unique, e.g. "worker:backend:1"
  std::string group;             ///< "frontend", "router", "planner", "worker:<pool>"
  std::vector<std::string> argv; ///< argv[0] is the executable path
  bool restart = true;           ///< false: an exit is final, kept in process_entry::exit_status
  bool die_with_parent = false;  ///< SIGKILL the child when this process dies (PR_SET_PDEATHSIG)
  bool stdout_to_stderr = false; ///< keep the parent's stdout for its own output
};

struct process_entry {
  process_spec spec;
  pid_t pid = -1;
  uint32_t restarts = 0;
  bool stopping = false;         ///< asked to stop: do not restart
  std::optional<int> exit_status; ///< waitpid status of a final exit (spec.restart == false)
  std::chrono::steady_clock::time_point next_start{};
  std::chrono::steady_clock::time_point started{};
  uint32_t failed_starts = 0;     ///< exits with an error code in a row, each within min_run
};

/// A child that exits with a non-zero exit code (not a signal) after running
/// less than `min_run`, `max_failed_starts` times in a row, cannot start: a bad
/// config, a taken port, a missing file. Restarting it would loop forever.
inline constexpr std::chrono::seconds min_run{10};
inline constexpr uint32_t max_failed_starts = 3;

class process_set {
public:
  /// Adds and starts a process.
  void add(process_spec spec);
  /// Asks the newest process of `group` to stop (SIGTERM); it is removed once
  /// it exits. False when the group has none.
  bool stop_one(const std::string& group);
  /// Processes of `group` not asked to stop.
  [[nodiscard]] size_t count(const std::string& group) const;
  /// Reaps exited children and restarts unexpected exits (after a backoff);
  /// a child with spec.restart == false keeps its entry, with exit_status set.
  void poll();
  /// SIGTERM to every process in the order given by `groups` (a prefix match),
  /// waits up to `grace` for each wave, then SIGKILLs what is left.
  void stop_all(const std::vector<std::string>& group_order, std::chrono::milliseconds grace);
  [[nodiscard]] const std::vector<process_entry>& entries() const noexcept { return entries_; }
  /// The entry named `name`, nullptr when none.
  [[nodiscard]] const process_entry* find(const std::string& name) const;
  /// Set once a restartable child failed to start max_failed_starts times in a
  /// row (it is no longer restarted): its name and last exit status.
  [[nodiscard]] const std::optional<std::string>& failed_start() const noexcept { return failed_start_; }

private:
  void start(process_entry& e);
  std::vector<process_entry> entries_;
  std::optional<std::string> failed_start_;
};

} // namespace dynamo::apps
