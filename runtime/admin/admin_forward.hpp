// Drain/undrain from any process's admin API: the discovery metadata key under
// which a process publishes its admin URL, the header that marks a forwarded
// request, and the decision to answer, forward or 404. Used by
// actors/admin/admin_service and apps/common (publishing). Pure; any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/core/http_url.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::admin {

/// Discovery record metadata key naming the publishing process's admin API
/// ("http://host:port", or "https://host:port" over TLS); absent when the
/// process serves none.
inline constexpr std::string_view admin_url_key = "admin";

/// Set on a forwarded drain/undrain; a request carrying it is never forwarded again.
inline constexpr std::string_view forwarded_header = "x-dynamo-admin-forwarded";

/// The admin URL a process publishes when its admin server listens on
/// `bind_host`:`port` (over TLS when `tls`: https://): the bind host when it
/// names one, else `advertise_host` (a wildcard bind is reachable as no
/// address). "" when neither names a host.
[[nodiscard]] std::string advertised_admin_url(std::string_view bind_host,
                                               std::string_view advertise_host, uint16_t port,
                                               bool tls = false);

enum class drain_route {
  answer,    ///< this process hosts the worker (or failed otherwise): answer its result
  forward,   ///< send the request on to the hosting process's admin API
  not_found, ///< 404 with `why`
};

/// What discovery says about the instance a drain names: the admin URL its
/// process publishes ("" when none) and, for a record that is not a worker's
/// (a frontend, router or planner process), that process's component name.
struct instance_host {
  std::string admin_url;
  std::string non_worker; ///< "" for a worker; else e.g. "frontend"
};

struct drain_decision {
  drain_route route = drain_route::answer;
  http_url to;     ///< for forward (to.tls: over HTTPS)
  std::string why; ///< for not_found
};

/// After this process's own drain answered `local`: anything but
/// errc::not_found is answered; a request that was `forwarded` already is not
/// forwarded again (loop guard); otherwise `host` decides: nullopt (no record
/// has the instance), a non-worker record, "" (its host publishes no admin URL)
/// or an unparsable URL give not_found, a good one (http:// or https://) forward. `why` says which,
/// in words that do not repeat the local error.
[[nodiscard]] drain_decision route_drain(const expected<void>& local, bool forwarded,
                                         const std::optional<instance_host>& host);

} // namespace dynamo::admin
