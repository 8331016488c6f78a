// Internal to kernels/reference: e^x, e^(x - m) and SwiGLU per lane of a GCC/Clang vector
// type (4 lanes in swiglu's plain path, 8 and 16 on the x86 paths). Plain IEEE
// mul/add/div per lane (the library builds with -ffp-contract=off), so every
// width and target gives the same bits. Pure, header-only, always inlined.
#pragma once

#include <cstdint>
#include <cstring>

namespace dynamo::kernels::ref::detail {

/// e^x per lane (Cephes expf: n = floor(x log2 e + 1/2), r = x - n ln 2 in
/// two steps, a degree-6 polynomial, times 2^n in two exact-or-once-rounded
/// steps), within ~1 ulp; +inf past 88.72, 0 below -103.28, NaN stays NaN.
/// F: float lanes, I: int32 lanes of the same count. In place (a vector
/// by value would be a -Wpsabi matter outside the x86 paths' targets).
template <class F, class I>
[[gnu::always_inline]] inline void exp_lanes(F& x) {
  const F max_x = F{} + 88.72283905206835f, min_x = F{} - 103.278929903431851103f;
  const I over = x > max_x, under = x < min_x;
  x = x > max_x ? max_x : x;
  x = x < min_x ? min_x : x;
  const F t = x * 1.44269504088896341f + 0.5f;
  I n = __builtin_convertvector(t, I);       // toward zero; floor below
  n += __builtin_convertvector(n, F) > t;    // true is -1
  const F fn = __builtin_convertvector(n, F);
  const F r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  const F r2 = r * r;
  F p = r * 1.9875691500E-4f + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  F y = p * r2 + r + 1.0f;
  const I n1 = n / 2, n2 = n - n1; // each in [-75, 65]: 2^n1 and 2^n2 are normal floats
  const I b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  F s1, s2;
  std::memcpy(&s1, &b1, sizeof(s1));
  std::memcpy(&s2, &b2, sizeof(s2));
  y = y * s1 * s2;
  y = over ? F{} + __builtin_inff() : y;
  x = under ? F{} : y;
}

/// silu(g) * u = g / (1 + e^-g) * u over n floats, W lanes at a time; the
/// last n % W through the same lanes (zero-padded), so each element's bits
/// do not depend on its position.
template <class F, class I>
[[gnu::always_inline]] inline void swiglu_lanes(const float* g, const float* u, float* o, uint32_t n) {
  constexpr uint32_t w = sizeof(F) / sizeof(float);
  auto one = [](const float* gp, const float* up, float* op) __attribute__((always_inline)) {
    F gv, uv;
    std::memcpy(&gv, gp, sizeof(F));
    std::memcpy(&uv, up, sizeof(F));
    F e = -gv;
    exp_lanes<F, I>(e);
    const F ov = gv / (1.0f + e) * uv;
    std::memcpy(op, &ov, sizeof(F));
  };
  uint32_t i = 0;
  for (; i + w <= n; i += w) one(g + i, u + i, o + i);
  if (i < n) {
    float gt[w] = {}, ut[w] = {}, ot[w];
    for (uint32_t j = 0; j < n - i; ++j) {
      gt[j] = g[i + j];
      ut[j] = u[i + j];
    }
    one(gt, ut, ot);
    for (uint32_t j = 0; j < n - i; ++j) o[i + j] = ot[j];
  }
}

/// x[i] = e^(x[i] - m) over n floats, W lanes at a time, the tail as in swiglu_lanes.
template <class F, class I>
[[gnu::always_inline]] inline void exp_sub_lanes(float* x, uint32_t n, float m) {
  constexpr uint32_t w = sizeof(F) / sizeof(float);
  auto one = [m](float* p) __attribute__((always_inline)) {
    F v;
    std::memcpy(&v, p, sizeof(F));
    v = v - m;
    exp_lanes<F, I>(v);
    std::memcpy(p, &v, sizeof(F));
  };
  uint32_t i = 0;
  for (; i + w <= n; i += w) one(x + i);
  if (i < n) {
    float t[w] = {};
    for (uint32_t j = 0; j < n - i; ++j) t[j] = x[i + j];
    one(t);
    for (uint32_t j = 0; j < n - i; ++j) x[i + j] = t[j];
  }
}

} // namespace dynamo::kernels::ref::detail
