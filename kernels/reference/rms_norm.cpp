#include "kernels/reference/rms_norm.hpp"

#include <cmath>

namespace dynamo::kernels::ref {
namespace {

/// sum of x[i]^2 in double: eight partial sums (element i to sum i % 8, the
/// squares exact in double), added in a fixed tree, then the last n % 8 in
/// order. Plain C++ compiled once, so every kernel path has these bits; the
/// eight independent chains let it run at the adds' throughput, not latency.
double sum_squares(const float* x, uint32_t n) {
  double acc[8] = {};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (uint32_t l = 0; l < 8; ++l) acc[l] += static_cast<double>(x[i + l]) * x[i + l];
  }
  double sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

} // namespace

void rms_norm(const rms_norm_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    float* x = a.x + t * a.x_stride;
    if (a.residual != nullptr) {
      const float* r = a.residual + t * a.residual_stride;
      for (uint32_t i = 0; i < a.n; ++i) x[i] += r[i];
    }
    const double sum = sum_squares(x, a.n); // double: the mean of squares stays exact enough for any n
    const float scale = static_cast<float>(1.0 / std::sqrt(sum / a.n + a.eps));
    float* out = a.out + t * a.out_stride;
    for (uint32_t i = 0; i < a.n; ++i) out[i] = x[i] * scale * a.weight[i];
  }
}

} // namespace dynamo::kernels::ref
