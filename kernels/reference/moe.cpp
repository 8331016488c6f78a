#include "kernels/reference/moe.hpp"

#include "kernels/reference/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace dynamo::kernels::ref {

void moe_route(const moe_route_args& a) {
  std::vector<float> p(a.n_expert);
  std::vector<uint32_t> order(a.n_expert);
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    const float* x = a.logits + t * a.logits_stride;
    std::copy(x, x + a.n_expert, p.begin());
    softmax(p.data(), a.n_expert);
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(order.begin(), order.begin() + a.k, order.end(),
                      [&](uint32_t i, uint32_t j) { return p[i] > p[j] || (p[i] == p[j] && i < j); });
    float sum = 0.0f;
    for (uint32_t j = 0; j < a.k; ++j) sum += p[order[j]];
    // As llama.cpp: the sum is clamped away from 0 (the smallest normal half).
    const float norm = a.normalize ? a.scale / std::max(sum, 6.103515625e-5f) : a.scale;
    for (uint32_t j = 0; j < a.k; ++j) {
      a.expert[t * a.k + j] = order[j];
      a.weight[t * a.k + j] = p[order[j]] * norm;
    }
  }
}

void moe_group(const moe_group_args& a) {
  uint32_t* start = a.expert_start;
  // Counts into start[e + 1], prefix sums, then start[e] serves as expert e's
  // cursor; afterwards start[e] has advanced to the old start[e + 1], so one
  // shift restores the starts.
  std::fill(start, start + a.n_expert + 1, 0u);
  for (uint32_t p = 0; p < a.n_pairs; ++p) ++start[a.expert[p] + 1];
  for (uint32_t e = 0; e < a.n_expert; ++e) start[e + 1] += start[e];
  for (uint32_t p = 0; p < a.n_pairs; ++p) {
    const uint32_t row = start[a.expert[p]]++;
    a.pair_token[row] = p / a.k;
    a.pair_row[p] = row;
  }
  for (uint32_t e = a.n_expert; e > 0; --e) start[e] = start[e - 1];
  start[0] = 0;
}

void moe_combine(const moe_combine_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    float* out = a.out + t * a.out_stride;
    std::fill(out, out + a.n, 0.0f);
    for (uint32_t j = 0; j < a.k; ++j) {
      const float w = a.weight[t * a.k + j];
      const float* y = a.y + a.pair_row[t * a.k + j] * a.y_stride;
      for (uint32_t i = 0; i < a.n; ++i) out[i] += w * y[i];
    }
    if (a.shared == nullptr) continue;
    const float gate = 1.0f / (1.0f + std::exp(-a.shared_gate[t]));
    const float* s = a.shared + t * a.shared_stride;
    for (uint32_t i = 0; i < a.n; ++i) out[i] += gate * s[i];
  }
}

} // namespace dynamo::kernels::ref
