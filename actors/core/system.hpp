// Creates the process's CAF actor system the way every dynamo binary wants it:
// the `sharing` scheduler (foreign threads such as ZeroMQ and HTTP I/O threads
// send into actors cheaply with it; see research/deps.md 1) and a thread count.
// Call once from main(); the returned system outlives every actor.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <memory>

namespace dynamo::actors {

struct actor_runtime {
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> system;
};

/// `threads` 0 picks max(2, hardware threads).
[[nodiscard]] actor_runtime make_actor_system(unsigned threads = 0);

} // namespace dynamo::actors
