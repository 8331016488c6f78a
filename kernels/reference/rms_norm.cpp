#include "kernels/reference/rms_norm.hpp"

#include <cmath>
#include <cstring>

namespace dynamo::kernels::ref {
namespace {

// GCC/Clang vector extensions: element-wise the same arithmetic as scalar
// code (so the same bits on every target), in SSE2 registers on any x86-64.
using f32x4 = float __attribute__((vector_size(16)));
using f32x2 = float __attribute__((vector_size(8)));
using f64x2 = double __attribute__((vector_size(16)));

f32x4 load4(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void store4(float* p, f32x4 v) { std::memcpy(p, &v, sizeof(v)); }

/// x[0]^2, x[1]^2 in double (exact: a float's square fits a double).
f64x2 squares(const float* x) {
  f32x2 h;
  std::memcpy(&h, x, sizeof(h));
  const f64x2 d = __builtin_convertvector(h, f64x2);
  return d * d;
}

/// sum of x[i]^2 in double: eight partial sums a_l (element i to a_{i % 8}),
/// added as ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), then the last
/// n % 8 in order. The eight independent chains run at the adds' throughput
/// where one serial chain waited on each add's latency.
double sum_squares(const float* x, uint32_t n) {
  f64x2 a01 = {0, 0}, a23 = {0, 0}, a45 = {0, 0}, a67 = {0, 0};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a01 += squares(x + i);
    a23 += squares(x + i + 2);
    a45 += squares(x + i + 4);
    a67 += squares(x + i + 6);
  }
  const f64x2 u = (a01 + a45) + (a23 + a67); // {(a0 + a4) + (a2 + a6), (a1 + a5) + (a3 + a7)}
  double sum = u[0] + u[1];
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

} // namespace

void rms_norm(const rms_norm_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    float* x = a.x + t * a.x_stride;
    const uint32_t n4 = a.n / 4 * 4;
    if (a.residual != nullptr) {
      const float* r = a.residual + t * a.residual_stride;
      for (uint32_t i = 0; i < n4; i += 4) store4(x + i, load4(x + i) + load4(r + i));
      for (uint32_t i = n4; i < a.n; ++i) x[i] += r[i];
    }
    const double sum = sum_squares(x, a.n); // double: the mean of squares stays exact enough for any n
    const float scale = static_cast<float>(1.0 / std::sqrt(sum / a.n + a.eps));
    float* out = a.out + t * a.out_stride; // may alias x: each element is read before it is written
    for (uint32_t i = 0; i < n4; i += 4) store4(out + i, load4(x + i) * scale * load4(a.weight + i));
    for (uint32_t i = n4; i < a.n; ++i) out[i] = x[i] * scale * a.weight[i];
  }
}

} // namespace dynamo::kernels::ref
