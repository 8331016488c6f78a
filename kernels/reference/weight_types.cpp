#include "kernels/reference/weight_types.hpp"

#include <bit>

namespace dynamo::kernels::ref {

std::string_view to_string(weight_type t) noexcept {
  switch (t) {
    case weight_type::f32: return "f32";
    case weight_type::f16: return "f16";
    case weight_type::q4_0: return "q4_0";
    case weight_type::q4_1: return "q4_1";
    case weight_type::q8_0: return "q8_0";
    case weight_type::q4_k: return "q4_k";
    case weight_type::q6_k: return "q6_k";
    case weight_type::bf16: return "bf16";
  }
  return "unknown";
}

bool is_supported(uint32_t id) noexcept {
  switch (static_cast<weight_type>(id)) {
    case weight_type::f32:
    case weight_type::f16:
    case weight_type::q4_0:
    case weight_type::q4_1:
    case weight_type::q8_0:
    case weight_type::q4_k:
    case weight_type::q6_k:
    case weight_type::bf16: return true;
  }
  return false;
}

uint32_t block_elems(weight_type t) noexcept {
  switch (t) {
    case weight_type::f32:
    case weight_type::f16:
    case weight_type::bf16: return 1;
    case weight_type::q4_0:
    case weight_type::q4_1:
    case weight_type::q8_0: return 32;
    case weight_type::q4_k:
    case weight_type::q6_k: return 256;
  }
  return 1;
}

uint32_t block_bytes(weight_type t) noexcept {
  switch (t) {
    case weight_type::f32: return 4;
    case weight_type::f16:
    case weight_type::bf16: return 2;
    case weight_type::q4_0: return sizeof(block_q4_0);
    case weight_type::q4_1: return sizeof(block_q4_1);
    case weight_type::q8_0: return sizeof(block_q8_0);
    case weight_type::q4_k: return sizeof(block_q4_k);
    case weight_type::q6_k: return sizeof(block_q6_k);
  }
  return 4;
}

float fp16_to_fp32(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13); // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign; // signed zero
  } else {
    // Subnormal half: normalise the mantissa into an fp32 normal.
    uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t fp32_to_fp16(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) { // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) { // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) { // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign); // < 2^-25 rounds to 0
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e; // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((abs >> 13) - (112u << 10)); // rebias exponent, keep 10 mantissa bits
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r; // carry may bump the exponent
  return static_cast<uint16_t>(sign | r);
}

} // namespace dynamo::kernels::ref
