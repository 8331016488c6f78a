#include "kernels/reference/moe.hpp"

#include "kernels/reference/softmax.hpp"

#include <algorithm>
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

} // namespace dynamo::kernels::ref
