#include "runtime/route/selector.hpp"

#include <algorithm>
#include <cmath>

namespace dynamo::route {

double kv_logit(double overlap_score_weight, double prefill_tokens, uint32_t block_size,
                double decode_blocks) noexcept {
  double bs = block_size == 0 ? 1.0 : static_cast<double>(block_size);
  return overlap_score_weight * (prefill_tokens / bs) + decode_blocks;
}

cost_weights weights_from_timing(const timing_costs& t) noexcept {
  return {t.prefill_ms_per_block / t.step_ms_per_block,
          std::clamp(1.0 - t.onboard_ms_per_block / t.prefill_ms_per_block, 0.0, 1.0)};
}

double uniform01(std::mt19937_64& rng) noexcept {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

std::vector<double> softmax_probabilities(std::span<const double> logits, double temperature) {
  std::vector<double> p(logits.size(), 0.0);
  if (logits.empty())
    return p;
  auto [lo, hi] = std::minmax_element(logits.begin(), logits.end());
  double range = *hi - *lo;
  if (range == 0 || temperature <= 0) {
    std::fill(p.begin(), p.end(), 1.0 / static_cast<double>(p.size()));
    return p;
  }
  // Scores -(logit / range) / T, shifted by the largest score (the min logit).
  double scale = -1.0 / (range * temperature);
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp((logits[i] - *lo) * scale);
    sum += p[i];
  }
  for (double& x : p)
    x /= sum;
  return p;
}

kv_selector::kv_selector(uint64_t seed) : rng_(seed) {}

size_t kv_selector::select(std::span<const candidate_cost> c, double temperature) {
  if (c.size() <= 1)
    return 0;
  if (temperature > 0) {
    logits_.clear();
    for (const auto& x : c)
      logits_.push_back(x.logit);
    std::vector<double> p = softmax_probabilities(logits_, temperature);
    double u = uniform01(rng_);
    double cum = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      cum += p[i];
      if (u < cum)
        return i;
    }
    return p.size() - 1;
  }
  double best = c[0].logit;
  for (const auto& x : c)
    best = std::min(best, x.logit);
  uint64_t smallest_tree = UINT64_MAX;
  for (const auto& x : c)
    if (x.logit == best)
      smallest_tree = std::min(smallest_tree, x.tree_size);
  ties_.clear();
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].logit == best && c[i].tree_size == smallest_tree)
      ties_.push_back(i);
  if (ties_.size() == 1)
    return ties_[0];
  return ties_[static_cast<size_t>(uniform01(rng_) * static_cast<double>(ties_.size()))];
}

size_t round_robin_selector::select(size_t n) noexcept {
  size_t i = next_ % n;
  next_ = i + 1;
  return i;
}

size_t random_selector::select(size_t n) noexcept {
  return static_cast<size_t>(uniform01(rng_) * static_cast<double>(n));
}

} // namespace dynamo::route
