#include "runtime/model/sampler.hpp"

#include "kernels/counter_rng.hpp"
#include "kernels/reference/token_bitmask.hpp"
#include "runtime/engine/logit_edit_state.hpp"

#include <algorithm>
#include <cmath>

namespace dynamo::model {
namespace {

bool before(const std::pair<float, uint32_t>& a, const std::pair<float, uint32_t>& b) noexcept {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

bool is_greedy(const protocol::sampling_options& o) noexcept {
  return !(o.temperature > 0.0f) || !std::isfinite(o.temperature) || o.top_k == 1;
}

} // namespace

double sampler::uniform(uint64_t seed, uint32_t position) noexcept { return kernels::rng_uniform(seed, position); }

uint32_t sampler::argmax(std::span<const float> logits) noexcept {
  return static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void sampler::sort_prefix(size_t m) {
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(m), cand_.end(), before);
}

sample_result sampler::sample(std::span<const float> logits, const protocol::sampling_options& o,
                              std::span<const kernels::logit_edit> edits, uint64_t seq_id,
                              uint32_t sample_position, std::span<const uint64_t> allowed) {
  std::span<const float> row = logits;
  if (!allowed.empty() || !edits.empty()) {
    processed_.assign(logits.begin(), logits.end());
    kernels::ref::apply_token_bitmask({processed_.data(), processed_.size(), static_cast<uint32_t>(processed_.size()),
                                       allowed.data(), static_cast<uint32_t>(allowed.size()), allowed.empty() ? 0u : 1u});
    const kernels::logit_penalties pen = engine::penalties_of(o);
    for (const kernels::logit_edit& e : edits)
      if (e.token < processed_.size()) processed_[e.token] = kernels::apply_logit_edit(processed_[e.token], e, pen);
    row = processed_;
  }
  sample_result r;
  const bool greedy = is_greedy(o);
  if (greedy) {
    r.token = argmax(row);
  } else {
    const uint64_t seed = kernels::rng_stream_seed(o.seed.has_value(), o.seed.value_or(0), process_seed_, seq_id);
    r.token = draw(row, o, uniform(seed, sample_position));
  }
  if (o.logprobs) {
    const uint32_t k = std::min(*o.logprobs, protocol::max_top_logprobs);
    r.logprobs = logprobs(row, o.temperature, r.token, k);
  }
  return r;
}

uint32_t sampler::draw(std::span<const float> logits, const protocol::sampling_options& o, double u) {
  const float temp = o.temperature;
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
  auto weight = [&](size_t i) { return std::exp(static_cast<double>(cand_[i].first - max_logit) / temp); };

  const double min_p = std::isfinite(o.min_p) ? std::clamp(static_cast<double>(o.min_p), 0.0, 1.0) : 0.0;
  if (min_p > 0.0) {
    // The kept tokens (weight >= min_p, the top one's weight being 1) are the
    // largest ones, ties included: a sorted prefix of the candidates.
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) m += weight(i) >= min_p ? 1 : 0;
    if (m > sorted) {
      sort_prefix(m);
      sorted = m;
    }
    n = std::max<size_t>(m, 1);
  }
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) z += weight(i);
  auto prob = [&](size_t i) { return weight(i) / z; };

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
  // Scan in candidate order (sorted when truncated, id order otherwise).
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += prob(i);
    if (u < acc) return cand_[i].second;
  }
  return cand_[n - 1].second; // u within rounding of 1
}

protocol::token_logprob sampler::logprobs(std::span<const float> logits, float temperature, uint32_t token,
                                          uint32_t k) {
  const double t = temperature > 0.0f && std::isfinite(temperature) ? static_cast<double>(temperature) : 1.0;
  const double mx = static_cast<double>(*std::max_element(logits.begin(), logits.end()));
  double z = 0.0;
  for (float x : logits) z += std::exp((static_cast<double>(x) - mx) / t);
  const double log_z = std::log(z);
  auto lp = [&](uint32_t i) { return static_cast<float>((static_cast<double>(logits[i]) - mx) / t - log_z); };
  protocol::token_logprob out;
  out.logprob = lp(token);
  k = std::min<uint32_t>(k, static_cast<uint32_t>(logits.size()));
  if (k == 0) return out;
  cand_.resize(logits.size());
  for (uint32_t i = 0; i < logits.size(); ++i) cand_[i] = {logits[i], i};
  sort_prefix(k);
  out.top.reserve(k);
  for (uint32_t i = 0; i < k; ++i) out.top.push_back({cand_[i].second, lp(cand_[i].second)});
  return out;
}

} // namespace dynamo::model
