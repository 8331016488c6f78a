// IEEE binary16 and bfloat16 <-> fp32 conversions: the fp16 scales of every
// quant block, F16/BF16 weights and the f16 KV cache use them. Exact widening;
// narrowing rounds to nearest even. Pure inline functions, any thread; C++17
// (nvcc includes it through tensor_type.hpp).
#pragma once

#include <cstdint>
#include <cstring>

namespace dynamo::kernels::ref {

namespace detail {
inline float bits_to_float(uint32_t b) noexcept {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline uint32_t float_to_bits(float f) noexcept {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
} // namespace detail

/// Exact widening of an IEEE binary16 value (subnormals, inf and NaN kept).
[[nodiscard]] inline float fp16_to_fp32(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return detail::bits_to_float(sign | 0x7f800000u | (mant << 13)); // inf / NaN
  if (exp != 0) return detail::bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return detail::bits_to_float(sign);
  // Subnormal half: normalise the mantissa into an fp32 normal.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return detail::bits_to_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

/// Round-to-nearest-even narrowing; overflow gives +-inf, NaN stays a quiet NaN.
[[nodiscard]] inline uint16_t fp32_to_fp16(float f) noexcept {
  const uint32_t x = detail::float_to_bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu)); // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds to >= 65520: inf
  if (abs < 0x38800000u) { // below the smallest normal half (2^-14)
    if (abs < 0x33000000u) return sign; // below half the smallest subnormal: zero
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e; // 14..24 (value = m * 2^(e-150), unit 2^-24)
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t r = (abs - 0x38000000u) >> 13; // rebias 127 -> 15, keep 10 mantissa bits
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r; // a carry into the exponent is still right
  return static_cast<uint16_t>(sign | r);
}

/// bfloat16 is the upper half of an fp32 (exact).
[[nodiscard]] inline float bf16_to_fp32(uint16_t b) noexcept {
  return detail::bits_to_float(static_cast<uint32_t>(b) << 16);
}

/// Round-to-nearest-even narrowing to bfloat16 (NaN stays NaN).
[[nodiscard]] inline uint16_t fp32_to_bf16(float f) noexcept {
  const uint32_t x = detail::float_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

} // namespace dynamo::kernels::ref
