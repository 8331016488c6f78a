// The router's cost as configured (router_cost / --router-cost): the time-priced
// overlap weight read from the profile file before a router is built, and the
// log line that names it. Called from main() threads of dynamo-run,
// dynamo-frontend and dynamo-router.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/route/config.hpp"

#include <string_view>

namespace dynamo::apps {

/// plan::apply_router_cost on `kv`, logged as "<app>: router cost timing ..."
/// with the per-block times and the weights; nothing with Dynamo's cost.
[[nodiscard]] expected<void> apply_router_cost(route::kv_router_config& kv, std::string_view app);

} // namespace dynamo::apps
