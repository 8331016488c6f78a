#include "kernels/reference/rms_norm.hpp"

#include <cmath>

namespace dynamo::kernels::ref {

void rms_norm(const rms_norm_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    float* x = a.x + t * a.x_stride;
    if (a.residual != nullptr) {
      const float* r = a.residual + t * a.residual_stride;
      for (uint32_t i = 0; i < a.n; ++i) x[i] += r[i];
    }
    double sum = 0.0; // double: the mean of squares stays exact enough for any n
    for (uint32_t i = 0; i < a.n; ++i) sum += static_cast<double>(x[i]) * x[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(sum / a.n + a.eps));
    float* out = a.out + t * a.out_stride;
    for (uint32_t i = 0; i < a.n; ++i) out[i] = x[i] * scale * a.weight[i];
  }
}

} // namespace dynamo::kernels::ref
