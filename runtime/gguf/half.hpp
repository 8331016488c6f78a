// IEEE fp16 and bfloat16 <-> fp32 conversions used by the GGUF quant formats
// (block scales are fp16) and by the CPU engine. Pure functions, exact
// (fp32 -> fp16 rounds to nearest even); safe from any thread.
#pragma once

#include <bit>
#include <cstdint>

namespace dynamo::gguf {

/// Exact widening of an IEEE binary16 value (subnormals, inf and NaN kept).
[[nodiscard]] constexpr float fp16_to_fp32(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) // inf / NaN
    return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  if (exp != 0)
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0)
    return std::bit_cast<float>(sign);
  // Subnormal: normalise the mantissa.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

/// Round-to-nearest-even narrowing; overflow gives +-inf, NaN stays NaN.
[[nodiscard]] constexpr uint16_t fp32_to_fp16(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) // NaN: keep it quiet and non-zero
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) // rounds to >= 65520: infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs < 0x38800000u) { // below the smallest normal half (2^-14)
    if (abs < 0x33000000u) // below half the smallest subnormal (2^-25): zero
      return sign;
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - e; // 14..24 (value = m * 2^(e-150), unit 2^-24)
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u)))
      ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t r = abs - 0x38000000u; // rebias exponent 127 -> 15, mantissa still 23 bits
  const uint32_t rem = r & 0x1FFFu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
    ++r; // may carry into the exponent, which is still correct
  return static_cast<uint16_t>(sign | r);
}

/// bfloat16 is the upper half of an fp32.
[[nodiscard]] constexpr float bf16_to_fp32(uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

/// Round-to-nearest-even narrowing to bfloat16 (NaN stays NaN).
[[nodiscard]] constexpr uint16_t fp32_to_bf16(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

} // namespace dynamo::gguf
