#include "kernels/reference/bias_add.hpp"

namespace dynamo::kernels::ref {

void bias_add(const bias_add_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    float* row = a.y + t * a.y_stride;
    for (uint32_t i = 0; i < a.n; ++i) row[i] += a.bias[i];
  }
}

} // namespace dynamo::kernels::ref
