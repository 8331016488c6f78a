// The router's settings as configured, made ready before a router is built:
// the time-priced overlap weight read from the profile file (router_cost /
// --router-cost) with the log line that names it, and one warning naming the
// Dynamo router flags given that have no effect yet. Called from main()
// threads of dynamo-run, dynamo-frontend and dynamo-router.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/route/config.hpp"

#include <string_view>

namespace dynamo::apps {

/// plan::apply_router_cost on `kv`, logged as "<app>: router cost timing ..."
/// with the per-block times and the weights (nothing with Dynamo's cost);
/// then a warning when kv.inert_settings() is not empty.
[[nodiscard]] expected<void> prepare_router(route::kv_router_config& kv, std::string_view app);

} // namespace dynamo::apps
