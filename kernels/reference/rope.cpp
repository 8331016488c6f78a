#include "kernels/reference/rope.hpp"

#include <cmath>

namespace dynamo::kernels::ref {

rope_table make_rope_table(uint32_t rot_dim, uint32_t max_positions, float base, float freq_scale,
                           std::span<const float> freq_factors) {
  rope_table t;
  t.rot_dim = rot_dim;
  t.max_positions = max_positions;
  const uint32_t half = rot_dim / 2;
  t.cos.resize(static_cast<size_t>(max_positions) * half);
  t.sin.resize(static_cast<size_t>(max_positions) * half);
  for (uint32_t i = 0; i < half; ++i) {
    const double factor = freq_factors.empty() ? 1.0 : static_cast<double>(freq_factors[i]);
    const double inv_freq = std::pow(static_cast<double>(base), -2.0 * i / rot_dim) / factor;
    for (uint32_t pos = 0; pos < max_positions; ++pos) {
      const double theta = static_cast<double>(pos) * static_cast<double>(freq_scale) * inv_freq;
      t.cos[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::cos(theta));
      t.sin[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::sin(theta));
    }
  }
  return t;
}

void rope(const rope_args& a) {
  const uint32_t half = a.table->rot_dim / 2;
  // Element distance between the two members of pair i, and of pair i from i-1.
  const uint32_t pair_gap = a.style == rope_style::norm ? 1 : half;
  const uint32_t pair_step = a.style == rope_style::norm ? 2 : 1;
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    const float* c = a.table->cos.data() + static_cast<size_t>(a.positions[t]) * half;
    const float* s = a.table->sin.data() + static_cast<size_t>(a.positions[t]) * half;
    for (uint32_t h = 0; h < a.n_heads; ++h) {
      float* v = a.x + t * a.x_stride + static_cast<size_t>(h) * a.head_dim;
      for (uint32_t i = 0; i < half; ++i) {
        float& x0 = v[i * pair_step];
        float& x1 = v[i * pair_step + pair_gap];
        const float a0 = x0, a1 = x1;
        x0 = a0 * c[i] - a1 * s[i];
        x1 = a0 * s[i] + a1 * c[i];
      }
    }
  }
}

} // namespace dynamo::kernels::ref
