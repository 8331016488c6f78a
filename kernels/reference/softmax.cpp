#include "kernels/reference/softmax.hpp"

#include <algorithm>
#include <cmath>

namespace dynamo::kernels::ref {

void softmax(float* x, uint32_t n) {
  const float max = *std::max_element(x, x + n);
  if (!std::isfinite(max)) { // all -inf (or +inf present): no meaningful distribution
    for (uint32_t i = 0; i < n; ++i) x[i] = x[i] == max ? 1.0f : 0.0f;
    float count = 0.0f;
    for (uint32_t i = 0; i < n; ++i) count += x[i];
    for (uint32_t i = 0; i < n; ++i) x[i] /= count;
    return;
  }
  double sum = 0.0;
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (uint32_t i = 0; i < n; ++i) x[i] *= inv;
}

} // namespace dynamo::kernels::ref
