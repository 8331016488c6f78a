#include "runtime/admin/admin_forward.hpp"

#include "runtime/core/host.hpp"

namespace dynamo::admin {

std::string advertised_admin_url(std::string_view bind_host, std::string_view advertise_host,
                                 uint16_t port, bool tls) {
  std::string_view host = is_wildcard_host(bind_host) ? advertise_host : bind_host;
  if (is_wildcard_host(host) || port == 0)
    return {};
  return (tls ? "https://" : "http://") + url_host(host) + ":" + std::to_string(port);
}

drain_decision route_drain(const expected<void>& local, bool forwarded,
                           const std::optional<instance_host>& host) {
  drain_decision d;
  if (local || code_of(local.error()) != errc::not_found)
    return d;
  d.route = drain_route::not_found;
  if (forwarded) {
    d.why = "discovery names this process as its host (stale record?)";
    return d;
  }
  if (!host) {
    d.why = "no instance with this id in discovery";
    return d;
  }
  if (!host->non_worker.empty()) {
    d.why = "it is the record of a " + host->non_worker + " process, and only workers drain";
    return d;
  }
  if (host->admin_url.empty()) {
    d.why = "the process hosting this worker publishes no admin URL (admin disabled there?)";
    return d;
  }
  auto url = parse_http_or_https_url(host->admin_url, "admin URL");
  if (!url) {
    d.why = "the hosting process publishes a bad " + message_of(url.error());
    return d;
  }
  d.route = drain_route::forward;
  d.to = std::move(*url);
  return d;
}

} // namespace dynamo::admin
