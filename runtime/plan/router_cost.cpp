#include "runtime/plan/router_cost.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>
#include <vector>

namespace dynamo::plan {

namespace {

// Sums of deviations from one group's means: sxy and sxx of a least-squares slope.
struct slope_sums {
  double sxy = 0;
  double sxx = 0;
  void add(const std::vector<std::pair<double, double>>& xy) {
    if (xy.size() < 2)
      return;
    double mx = 0, my = 0;
    for (auto [x, y] : xy) {
      mx += x;
      my += y;
    }
    mx /= static_cast<double>(xy.size());
    my /= static_cast<double>(xy.size());
    for (auto [x, y] : xy) {
      sxy += (x - mx) * (y - my);
      sxx += (x - mx) * (x - mx);
    }
  }
};

caf::error profile_error(std::string message) {
  return make_error(errc::invalid_argument, std::move(message));
}

} // namespace

expected<route::timing_costs> router_timing_from_profile(const engine_profile& p) {
  const double bs = p.block_size == 0 ? 1.0 : static_cast<double>(p.block_size);
  std::vector<std::pair<double, double>> cold;
  for (const auto& x : p.prefill)
    if (x.prefix_hit == 0)
      cold.emplace_back(x.isl, x.ms);
  slope_sums prefill;
  prefill.add(cold);
  if (prefill.sxx == 0)
    return profile_error("no prefill fit: needs cold prefill points (prefix hit 0) at 2 or more prompt lengths");
  if (prefill.sxy <= 0)
    return profile_error("prefill time does not grow with the prompt length");

  std::map<uint32_t, std::vector<std::pair<double, double>>> by_batch;
  for (const auto& x : p.decode)
    by_batch[x.batch].emplace_back(static_cast<double>(x.batch) * kv_blocks(x.context, p.block_size), x.step_ms);
  slope_sums decode;
  for (const auto& [batch, xy] : by_batch)
    decode.add(xy);
  if (decode.sxx == 0)
    return profile_error("no decode fit: needs decode points at 2 or more contexts for some batch");
  if (decode.sxy <= 0)
    return profile_error("decode step time does not grow with the context");

  route::timing_costs t;
  t.prefill_ms_per_block = prefill.sxy / prefill.sxx * bs;
  t.step_ms_per_block = decode.sxy / decode.sxx;
  return t;
}

expected<std::optional<router_cost_applied>> apply_router_cost(route::kv_router_config& c) {
  if (c.router_cost != route::cost_model::timing)
    return std::optional<router_cost_applied>{};
  auto fail = [&](std::string_view why) {
    return make_error(errc::config_error, fmt::format("--router-profile {}: {}", c.router_profile, why));
  };
  if (auto valid = c.validate(); !valid) // e.g. timing without a profile: validate() says so, in one place
    return std::move(valid.error());
  if (c.overlap_score_weight != route::kv_router_config{}.overlap_score_weight)
    return fail("--router-cost timing sets --kv-overlap-score-weight; give one of them");
  auto profile = load_profile(c.router_profile);
  if (!profile)
    return fail(message_of(profile.error()));
  auto t = router_timing_from_profile(*profile);
  if (!t)
    return fail(message_of(t.error()));
  router_cost_applied a{*t, route::weights_from_timing(*t).overlap_score_weight};
  c.overlap_score_weight = a.overlap_score_weight;
  return std::optional<router_cost_applied>{a};
}

} // namespace dynamo::plan
