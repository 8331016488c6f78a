#include "kernels/reference/swiglu.hpp"

#include <algorithm>
#include <cstring>

namespace dynamo::kernels::ref {
namespace {

// GCC/Clang vector extensions: four lanes of element-wise IEEE arithmetic,
// the same bits on every target (SSE2 registers on any x86-64).
using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = int32_t __attribute__((vector_size(16)));

/// e^x per lane (Cephes expf: n = floor(x log2 e + 1/2), r = x - n ln 2 in
/// two steps, a degree-6 polynomial, times 2^n in two exact-or-once-rounded
/// steps), within ~1 ulp of e^x; e^x = +inf past 88.72, 0 below -103.28,
/// NaN stays NaN. Plain mul/add (no fma), so no target changes the bits.
f32x4 exp4(f32x4 x) {
  const f32x4 max_x = f32x4{} + 88.72283905206835f, min_x = f32x4{} - 103.278929903431851103f;
  const i32x4 over = x > max_x, under = x < min_x;
  x = x > max_x ? max_x : x;
  x = x < min_x ? min_x : x;
  const f32x4 t = x * 1.44269504088896341f + 0.5f;
  i32x4 n = __builtin_convertvector(t, i32x4); // toward zero; floor below
  n += __builtin_convertvector(n, f32x4) > t;  // true is -1
  const f32x4 fn = __builtin_convertvector(n, f32x4);
  const f32x4 r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  const f32x4 r2 = r * r;
  f32x4 p = r * 1.9875691500E-4f + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  f32x4 y = p * r2 + r + 1.0f;
  const i32x4 n1 = n / 2, n2 = n - n1; // each in [-75, 65]: 2^n1 and 2^n2 are normal floats
  f32x4 s1, s2;
  const i32x4 b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  std::memcpy(&s1, &b1, sizeof(s1));
  std::memcpy(&s2, &b2, sizeof(s2));
  y = y * s1 * s2;
  const f32x4 inf = f32x4{} + __builtin_inff();
  y = over ? inf : y;
  return under ? f32x4{} : y;
}

f32x4 load4(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

/// silu(g) * u per lane.
f32x4 swiglu4(f32x4 g, f32x4 u) { return g / (1.0f + exp4(-g)) * u; }

} // namespace

void swiglu(const swiglu_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    const float* g = a.gate + t * a.in_stride;
    const float* u = a.up + t * a.in_stride;
    float* o = a.out + t * a.out_stride;
    uint32_t i = 0;
    for (; i + 4 <= a.n; i += 4) {
      const f32x4 v = swiglu4(load4(g + i), load4(u + i));
      std::memcpy(o + i, &v, sizeof(v));
    }
    if (i < a.n) { // the last n % 4 through the same lanes, so every element has the same bits
      float gt[4] = {}, ut[4] = {}, ot[4];
      std::copy(g + i, g + a.n, gt);
      std::copy(u + i, u + a.n, ut);
      const f32x4 v = swiglu4(load4(gt), load4(ut));
      std::memcpy(ot, &v, sizeof(v));
      std::copy(ot, ot + (a.n - i), o + i);
    }
  }
}

} // namespace dynamo::kernels::ref
