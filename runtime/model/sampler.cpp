#include "runtime/model/sampler.hpp"

#include <algorithm>
#include <cmath>

namespace dynamo::model {
namespace {

/// splitmix64's finaliser: a bijective 64-bit mix.
uint64_t mix(uint64_t z) noexcept {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool before(const std::pair<float, uint32_t>& a, const std::pair<float, uint32_t>& b) noexcept {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

} // namespace

double sampler::uniform(uint64_t seed, uint32_t position) noexcept {
  return static_cast<double>(mix(mix(seed) ^ position) >> 11) * 0x1.0p-53;
}

uint32_t sampler::argmax(std::span<const float> logits) noexcept {
  return static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void sampler::sort_prefix(size_t m) {
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(m), cand_.end(), before);
}

uint32_t sampler::sample(std::span<const float> logits, const protocol::sampling_options& o, uint64_t seq_id,
                         uint32_t sample_position) {
  const float temp = o.temperature;
  if (!(temp > 0.0f) || !std::isfinite(temp) || o.top_k == 1) return argmax(logits);
  const uint64_t seed = o.seed ? *o.seed : mix(process_seed_ ^ mix(seq_id));
  const double u = uniform(seed, sample_position);

  cand_.resize(logits.size());
  for (uint32_t i = 0; i < logits.size(); ++i) cand_[i] = {logits[i], i};
  size_t n = cand_.size();
  size_t sorted = 0; // candidates [0, sorted) are in descending order
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < n) {
    n = static_cast<size_t>(o.top_k);
    sort_prefix(n);
    sorted = n;
  }
  float max_logit = cand_[0].first;
  for (size_t i = 0; i < n; ++i) max_logit = std::max(max_logit, cand_[i].first);
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) z += std::exp(static_cast<double>(cand_[i].first - max_logit) / temp);
  auto prob = [&](size_t i) { return std::exp(static_cast<double>(cand_[i].first - max_logit) / temp) / z; };

  const double top_p = std::isfinite(o.top_p) ? std::clamp(static_cast<double>(o.top_p), 0.0, 1.0) : 1.0;
  if (top_p < 1.0) {
    // Grow the sorted prefix until it holds top_p of the mass.
    size_t keep = 0;
    double mass = 0.0;
    for (size_t m = std::min<size_t>(n, 64);; m = std::min(n, m * 4)) {
      if (m > sorted) {
        sort_prefix(m);
        sorted = m;
      }
      for (; keep < m && (keep == 0 || mass < top_p); ++keep) mass += prob(keep);
      if ((keep > 0 && mass >= top_p) || m == n) break;
    }
    n = keep;
    z *= mass; // renormalise over the kept set
  }
  // Scan in candidate order (sorted when filtered, id order otherwise).
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += prob(i);
    if (u < acc) return cand_[i].second;
  }
  return cand_[n - 1].second; // u within rounding of 1
}

} // namespace dynamo::model
