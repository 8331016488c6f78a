// Helpers that let a process implement admin_backend in a line each: actor rows
// from its supervisors (list_atom), restart by child name (restart_atom), and
// instance rows from its discovery plane. Called by each process's backend.
// Thread rules: blocking; call from a plain thread (the admin worker), never an actor.
#pragma once

#include "actors/admin/admin_backend.hpp"
#include "planes/discovery/discovery_plane.hpp"
#include "runtime/core/error.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dynamo::admin {

/// (supervisor name, supervisor handle), in the order rows are reported.
using supervisor_list = std::vector<std::pair<std::string, caf::actor>>;

/// Asks every supervisor for its children at once and waits at most `timeout`
/// in all. A supervisor that does not answer in time (or is gone, or is a null
/// handle) yields one row {supervisor, name "", state "unreachable",
/// last_reason: why}.
[[nodiscard]] std::vector<actor_row>
collect_actor_rows(caf::actor_system& sys, const supervisor_list& supervisors,
                   std::chrono::milliseconds timeout = std::chrono::seconds(1));

/// Asks the supervisors in order to restart their child `name`; the first
/// that has one restarts it. errc::not_found when every supervisor answered
/// and none has it; errc::timeout when none has it but some did not answer.
[[nodiscard]] expected<void> restart_actor(caf::actor_system& sys,
                                           const supervisor_list& supervisors,
                                           const std::string& name,
                                           std::chrono::milliseconds timeout = std::chrono::seconds(1));

/// The live records under `prefix` (see discovery_plane::list) as rows; each
/// row's admin_url is its record's admin_url_key metadata.
[[nodiscard]] expected<std::vector<instance_row>> instance_rows(planes::discovery_plane& discovery,
                                                                std::string_view prefix = {});

/// `instance_id`'s live record under `prefix` as an instance_host
/// (admin_backend::host_of): the admin URL it publishes, and its component when
/// that is a frontend, router or planner process rather than a worker; nullopt
/// when no live record has it.
[[nodiscard]] expected<std::optional<instance_host>>
find_instance_host(planes::discovery_plane& discovery, uint64_t instance_id,
                   std::string_view prefix = {});

} // namespace dynamo::admin
