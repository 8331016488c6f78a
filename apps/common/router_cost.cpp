#include "apps/common/router_cost.hpp"

#include "runtime/plan/router_cost.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace dynamo::apps {

expected<void> prepare_router(route::kv_router_config& kv, std::string_view app) {
  if (auto inert = kv.inert_settings(); !inert.empty())
    spdlog::warn("{}: {} accepted for compatibility with Dynamo's router but not acted on yet (this router has "
                 "no admission queue, replica sync, snapshots or approximate-mode expiry)",
                 app, fmt::join(inert, ", "));
  auto applied = plan::apply_router_cost(kv);
  if (!applied)
    return std::move(applied.error());
  if (!*applied)
    return {};
  const auto& a = **applied;
  spdlog::info("{}: router cost timing from {}: prefill {:.4g} ms per block, a resident block {:.4g} ms per "
               "decode step -> kv_overlap_score_weight {:.4g}, router_lower_tier_weight {:.4g} (as configured: "
               "the profile has no onboarding time)",
               app, kv.router_profile, a.timing.prefill_ms_per_block, a.timing.step_ms_per_block,
               a.overlap_score_weight, kv.router_lower_tier_weight);
  return {};
}

} // namespace dynamo::apps
