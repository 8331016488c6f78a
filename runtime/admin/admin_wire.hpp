// The pure pieces of the admin REST API (actors/admin/admin_service): the
// constant-time bearer check (the token is resolved by runtime/core/secret;
// loopback detection is runtime/core/host), instance id parsing, and the JSON bodies. Used by
// admin_service, its tests and fuzz/fuzz_admin.cpp. Pure functions; safe from any thread.
#pragma once

#include "runtime/admin/admin_types.hpp"
#include "runtime/core/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::admin {

/// True when `authorization` is "Bearer <token>" (scheme case-insensitive).
/// The token comparison takes time that depends only on the lengths.
[[nodiscard]] bool bearer_matches(std::string_view authorization, std::string_view token);

enum class admin_op { health, actors, instances, drain, undrain, restart };

/// What a request path names: its one allowed method, the operation, and the
/// argument segment as it stands (an instance id or a percent-encoded actor
/// name, validated by the caller). Views into `path`.
struct admin_route {
  std::string_view method;
  admin_op what = admin_op::health;
  std::string_view raw_arg;
};

/// GET /admin/{health,actors,instances}, POST /admin/workers/<id>/{drain,undrain},
/// POST /admin/actors/<name>/restart; nullopt for anything else (404).
[[nodiscard]] std::optional<admin_route> match_admin_route(std::string_view path);

/// 1 to 16 hex digits (either case) naming a non-zero instance id.
[[nodiscard]] std::optional<uint64_t> parse_instance_hex(std::string_view text);

// -- bodies (application/json) ---------------------------------------------
[[nodiscard]] std::string health_json(std::string_view process_kind);
[[nodiscard]] std::string actors_json(const std::vector<actor_row>& rows);
[[nodiscard]] std::string instances_json(const std::vector<instance_row>& rows);
[[nodiscard]] std::string drain_json(uint64_t instance_id, bool draining);
[[nodiscard]] std::string restarted_json(std::string_view name);
/// {"error":{"message":..,"type":..,"code":..}}.
[[nodiscard]] std::string error_json(std::string_view message, std::string_view type,
                                     std::string_view code);

/// The error `type` for an HTTP status ("invalid_request_error",
/// "authentication_error", "not_found_error", ...).
[[nodiscard]] std::string_view error_type_for(unsigned status) noexcept;

/// The HTTP status a backend error maps to: invalid_argument and
/// malformed_message 400, not_found 404, unsupported 501, timeout 504,
/// overloaded / closed / no_workers / disconnected 503, everything else 500.
[[nodiscard]] unsigned status_for(errc code) noexcept;

} // namespace dynamo::admin
