// The planner's output the VirtualConnector way (research/dynamo.md 6.6): a
// discovery record under <ns>/planner/decisions whose metadata holds
// "replicas.<pool>" = <n> and "decision_id" = <k>; an external orchestrator
// (the launcher) reads and applies it. Also the JSON line printed per decision.
// Pure functions; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/plan/planner.hpp"
#include "runtime/protocol/components.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace dynamo::plan {

inline constexpr std::string_view decisions_component = protocol::planner_component;
inline constexpr std::string_view decisions_endpoint = "decisions";
inline constexpr std::string_view replicas_key_prefix = "replicas.";
inline constexpr std::string_view decision_id_key = "decision_id";

/// What the decisions record says.
struct planner_decisions {
  uint64_t decision_id = 0; ///< 0: the config's replicas, no decision yet
  std::map<std::string, uint32_t> replicas;
};

/// The record's metadata.
[[nodiscard]] std::map<std::string, std::string> to_metadata(const planner_decisions& d);

/// Reads a decisions record's metadata (other keys are ignored).
/// errc::malformed_message for a missing decision_id or a value that is not a
/// non-negative 32-bit (replicas) / 64-bit (decision_id) decimal number.
[[nodiscard]] expected<planner_decisions>
from_metadata(const std::map<std::string, std::string>& metadata);

/// One line of JSON (no newline):
/// {"event":"scaling_decision","decision_id":k,"at_ms":t,"pool":..,"role":..,
///  "current":c,"target":n,"observed":o,"reason":".."}
[[nodiscard]] std::string decision_json(const scaling_decision& d, uint64_t decision_id, int64_t at_ms);

} // namespace dynamo::plan
