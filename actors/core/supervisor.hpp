// A supervisor actor: spawns named children from factories, monitors them and
// restarts any that stops abnormally (an exception in a handler, an explicit
// quit with an error), with exponential backoff and a restart budget, logging
// why. Its state (children, states, restart counts) is queryable for the admin
// API. Talk to it only through messages; the on_spawn callbacks run inside it.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dynamo::actors {

using list_atom = caf::atom_constant<caf::atom("list")>;       ///< -> std::vector<child_status>
using restart_atom = caf::atom_constant<caf::atom("restart")>; ///< (name) -> bool
using lookup_atom = caf::atom_constant<caf::atom("lookup")>;   ///< (name) -> caf::actor
using crash_atom = caf::atom_constant<caf::atom("crash")>;     ///< test hook understood by some children

enum class restart_policy : uint8_t {
  permanent, ///< always restarted, even after a normal exit
  transient, ///< restarted only after an abnormal exit
};

struct child_spec {
  std::string name;
  /// Spawns the child; called again on every restart.
  std::function<caf::actor(caf::actor_system&)> spawn;
  /// Called with the new handle after every (re)spawn, e.g. to update a bridge.
  std::function<void(const caf::actor&)> on_spawn;
  restart_policy policy = restart_policy::transient;
};

struct supervisor_config {
  std::string name = "supervisor";
  uint32_t max_restarts = 20;                      ///< within `window`, per child
  std::chrono::milliseconds window{60'000};
  std::chrono::milliseconds initial_backoff{10};   ///< doubled per consecutive crash
  std::chrono::milliseconds max_backoff{2'000};
};

/// One row of the supervision tree.
struct child_status {
  std::string name;
  std::string state;       ///< "running", "restarting", "stopped", "failed"
  uint32_t restarts = 0;
  std::string last_reason; ///< why it last stopped ("" if never)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, child_status& x) {
  return f(caf::meta::type_name("child_status"), x.name, x.state, x.restarts, x.last_reason);
}

/// Spawns a supervisor with its children (started immediately, in order).
[[nodiscard]] caf::actor spawn_supervisor(caf::actor_system& sys, supervisor_config cfg,
                                          std::vector<child_spec> children);

} // namespace dynamo::actors
