// Test helpers shared by the plane contract suites: condition waits (no timing
// assertions: a deadline only bounds a failing test), a child process started
// from the planes_test_peer helper with a line-based stdout handshake, and a
// recorder for request-plane calls. Thread-safe where noted.
#pragma once

#include "tests/support/child_process.hpp"

#include "planes/request/request_plane.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <sys/types.h>

namespace dynamo::planes::testing {

using namespace std::chrono_literals;

/// Polls `pred` every 2 ms until it holds (true) or `deadline` passes (false).
[[nodiscard]] bool wait_until(const std::function<bool()>& pred,
                              std::chrono::milliseconds deadline = 10s);

/// A unique scratch directory under /tmp, removed by the destructor.
class temp_dir {
public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
  std::string path_;
};

/// A planes_test_peer child (stdout on a pipe). The destructor SIGKILLs it.
using peer_process = test::child_process;
/// Starts the planes_test_peer helper with `args`; nullopt on failure.
[[nodiscard]] std::optional<peer_process> spawn_planes_peer(const std::vector<std::string>& args);

/// Records one call's items and its end. Callbacks are thread-safe and keep
/// the record alive, so a recorder may die before the client that calls them.
class call_recorder {
public:
  [[nodiscard]] item_callback on_item();
  [[nodiscard]] end_callback on_end();
  /// Waits for the end; false if it did not come before the deadline.
  [[nodiscard]] bool wait_end(std::chrono::milliseconds deadline = 10s);
  /// Waits until at least `n` items arrived.
  [[nodiscard]] bool wait_items(size_t n, std::chrono::milliseconds deadline = 10s);
  [[nodiscard]] std::vector<std::string> items() const;
  [[nodiscard]] bool ended() const;
  [[nodiscard]] caf::error error() const; ///< empty when finished cleanly (or not ended)
  [[nodiscard]] int end_count() const;
  [[nodiscard]] bool item_after_end() const;

private:
  struct record {
    mutable std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::string> items;
    std::optional<caf::error> end;
    int end_count = 0;
    bool item_after_end = false;
  };
  std::shared_ptr<record> r_ = std::make_shared<record>();
};

[[nodiscard]] bytes to_bytes(const std::string& s);
[[nodiscard]] std::string to_string(const bytes& b);

} // namespace dynamo::planes::testing

namespace dynamo {
/// Lets BOOST_TEST print error codes by name.
inline std::ostream& boost_test_print_type(std::ostream& os, errc code) {
  return os << to_string(code);
}
} // namespace dynamo
