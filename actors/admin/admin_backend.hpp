// What a process exposes to the admin REST API (actors/admin/admin_service):
// its supervision tree, the instances it sees on the discovery plane, and the
// operations drain/undrain a worker and restart an actor. Each binary
// implements it over its own pieces. Implementations must be thread-safe (the
// admin HTTP server calls them from its I/O threads) and may block briefly.
#pragma once

#include "runtime/admin/admin_forward.hpp"
#include "runtime/admin/admin_types.hpp"
#include "runtime/core/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::admin {

class admin_backend {
public:
  virtual ~admin_backend() = default;
  /// "frontend", "worker", "router", "planner".
  [[nodiscard]] virtual std::string process_kind() const = 0;
  [[nodiscard]] virtual std::vector<actor_row> actors() = 0;
  [[nodiscard]] virtual expected<std::vector<instance_row>> instances() = 0;
  /// Drains (true) or undrains (false) a worker hosted by this process.
  /// errc::not_found when this process does not host it.
  [[nodiscard]] virtual expected<void> drain(uint64_t instance_id, bool on) = 0;
  /// What discovery says about `instance_id` (runtime/admin/admin_forward.hpp):
  /// its process's admin URL ("" when it publishes none) and whether it is a
  /// worker at all; nullopt when no record has the instance.
  [[nodiscard]] virtual expected<std::optional<instance_host>> host_of(uint64_t instance_id) = 0;
  /// Restarts the named supervised actor. errc::not_found for an unknown name.
  [[nodiscard]] virtual expected<void> restart(const std::string& actor_name) = 0;
};

} // namespace dynamo::admin
