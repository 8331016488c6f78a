// The component names of the processes that host no worker (frontend, standalone
// router, planner) and the endpoint under which such a process publishes itself
// in discovery, so that operators (GET /admin/instances) see every process.
// Used by apps/common (publishing), actors/router and runtime/plan; constants only.
#pragma once

#include <string_view>

namespace dynamo::protocol {

inline constexpr std::string_view frontend_component = "frontend";
/// A standalone router's records: <ns>/router/generate (it serves requests).
inline constexpr std::string_view router_component = "router";
/// The planner's records: <ns>/planner/decisions (runtime/plan/decisions.hpp).
inline constexpr std::string_view planner_component = "planner";

/// <ns>/<component>/process: a process record. It serves nothing on the request
/// plane (no request address), so routers and the planner, which watch the
/// "generate" endpoint only, never take it for a worker. Its metadata names the
/// process (role_metadata_key) and its admin URL (admin::admin_url_key).
inline constexpr std::string_view process_endpoint = "process";

/// frontend, router or planner: names no worker pool may take (the cluster
/// config refuses them), so a record under one is never a worker's.
[[nodiscard]] constexpr bool is_reserved_component(std::string_view component) noexcept {
  return component == frontend_component || component == router_component ||
         component == planner_component;
}

/// True for the records of processes that host no worker: any process record,
/// and anything published under a reserved component.
[[nodiscard]] constexpr bool hosts_no_worker(std::string_view component,
                                             std::string_view endpoint) noexcept {
  return endpoint == process_endpoint || is_reserved_component(component);
}

} // namespace dynamo::protocol
