#include "kernels/reference/swiglu.hpp"

#include <cmath>

namespace dynamo::kernels::ref {

void swiglu(const swiglu_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    const float* g = a.gate + t * a.in_stride;
    const float* u = a.up + t * a.in_stride;
    float* o = a.out + t * a.out_stride;
    for (uint32_t i = 0; i < a.n; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
}

} // namespace dynamo::kernels::ref
