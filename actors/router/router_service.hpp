// The standalone router (dynamo-router): discovers worker pools like a
// frontend does, and serves their models on the request plane at
// ns/router/generate, one discovery record per model, so frontends configured
// with router.standalone send every request here and the KV index lives in one
// place. Requests are forwarded through the per-model routed_client (with
// migration). Thread-safe; create and destroy on one thread.
#pragma once

#include "actors/router/model_watcher.hpp"
#include "planes/discovery/discovery_plane.hpp"
#include "planes/request/request_plane.hpp"

#include <caf/actor_system.hpp>

#include <memory>
#include <string>

namespace dynamo::actors {

struct router_service_config {
  std::string namespace_name = "dynamo";
  std::string plane_host = "127.0.0.1"; ///< where its request socket binds
  std::string advertise_host;           ///< the host published for it ("": plane_host)
  std::string system_url;               ///< its system server, published as metadata "system"; "": none
  std::string admin_url;                ///< its admin API, published as metadata "admin"; "": none
  /// Mode, KV settings, migration; callbacks are set here. Its `curve` keys
  /// also secure this router's request server.
  model_watcher_config watcher;
};

class router_service {
public:
  [[nodiscard]] static expected<std::unique_ptr<router_service>>
  start(caf::actor_system& sys, planes::discovery_plane& discovery, router_service_config cfg);
  ~router_service();

  /// The request-plane address frontends call.
  [[nodiscard]] std::string address() const;
  /// Models currently offered (registered on discovery).
  [[nodiscard]] size_t model_count() const;
  /// The supervisors of its routers (admin API).
  [[nodiscard]] std::vector<std::pair<std::string, caf::actor>> supervisors() const;

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

} // namespace dynamo::actors
