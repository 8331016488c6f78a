#include "runtime/plan/budget.hpp"

#include <algorithm>

namespace dynamo::plan {

uint64_t total_cost(const std::vector<budget_pool>& pools,
                    const std::vector<uint32_t>& replicas) noexcept {
  uint64_t total = 0;
  for (size_t i = 0; i < pools.size() && i < replicas.size(); ++i)
    total += uint64_t{replicas[i]} * std::max<uint32_t>(1, pools[i].cost);
  return total;
}

std::optional<std::vector<uint32_t>> proportional_fit(const std::vector<budget_pool>& pools,
                                                      int64_t budget) {
  std::vector<uint32_t> proposed;
  for (const auto& p : pools)
    proposed.push_back(p.proposed);
  if (budget < 0 || pools.empty())
    return proposed;
  uint64_t cap_total = static_cast<uint64_t>(budget);
  uint64_t total = total_cost(pools, proposed);
  if (total <= cap_total)
    return proposed;
  std::vector<uint64_t> reserve_after(pools.size() + 1, 0);
  for (size_t i = pools.size(); i-- > 0;)
    reserve_after[i] = reserve_after[i + 1] + uint64_t{pools[i].min} * std::max<uint32_t>(1, pools[i].cost);
  if (reserve_after[0] > cap_total)
    return std::nullopt;

  std::vector<uint32_t> out(pools.size(), 0);
  uint64_t remaining = cap_total;
  for (size_t i = 0; i < pools.size(); ++i) {
    uint64_t cost = std::max<uint32_t>(1, pools[i].cost);
    uint64_t cap = (remaining - reserve_after[i + 1]) / cost; // >= min by the reserve
    bool last = i + 1 == pools.size();
    // Integer arithmetic: floor(proposed * budget / total) exactly.
    uint64_t want = last ? pools[i].proposed : uint64_t{pools[i].proposed} * cap_total / total;
    uint64_t n = std::min(cap, std::max<uint64_t>(pools[i].min, want));
    out[i] = static_cast<uint32_t>(n);
    remaining -= n * cost;
  }
  return out;
}

std::optional<std::vector<uint32_t>> enforce_gpu_budget(const std::vector<budget_pool>& pools,
                                                        int64_t budget) {
  std::vector<uint32_t> proposed, current;
  for (const auto& p : pools) {
    proposed.push_back(p.proposed);
    current.push_back(p.current);
  }
  if (budget < 0 || total_cost(pools, proposed) <= static_cast<uint64_t>(budget))
    return proposed;

  if (total_cost(pools, current) > static_cast<uint64_t>(budget)) {
    // Already over (a config or a budget change): only shrink.
    auto shrink = pools;
    for (auto& p : shrink)
      p.proposed = std::min(p.current, p.proposed);
    return proportional_fit(shrink, budget);
  }

  auto fit = proportional_fit(pools, budget);
  if (!fit)
    return std::nullopt;
  auto out = *fit;
  for (size_t i = 0; i < pools.size(); ++i) {
    uint32_t lo = std::min(pools[i].current, pools[i].proposed);
    uint32_t hi = std::max(pools[i].current, pools[i].proposed);
    out[i] = std::clamp(out[i], lo, hi);
  }
  // Clamping may have put growth back; take it away from the lowest priority first.
  while (total_cost(pools, out) > static_cast<uint64_t>(budget)) {
    size_t i = pools.size();
    while (i-- > 0 && out[i] <= pools[i].current) {
    }
    if (i >= pools.size())
      break; // unreachable: the current allocation fits
    --out[i];
  }
  return out;
}

} // namespace dynamo::plan
