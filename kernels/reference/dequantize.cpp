#include "kernels/reference/dequantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dynamo::kernels::ref {
namespace {

void dequantize_q4_0(const block_q4_0* b, float* y, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 0x0f) - 8);
      y[j + 16] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_q4_1(const block_q4_1* b, float* y, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(b[i].d);
    const float m = fp16_to_fp32(b[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(b[i].qs[j] & 0x0f) + m;
      y[j + 16] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
    }
  }
}

void dequantize_q8_0(const block_q8_0* b, float* y, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

/// 6-bit scale and min of sub-block j of a Q4_K block.
void q4_k_scale_min(int j, const uint8_t* s, uint8_t& sc, uint8_t& m) noexcept {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

void dequantize_q4_k(const block_q4_k* b, float* y, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int c = 0; c < 4; ++c, q += 32) {
      uint8_t sc0, m0, sc1, m1;
      q4_k_scale_min(2 * c, b[i].scales, sc0, m0);
      q4_k_scale_min(2 * c + 1, b[i].scales, sc1, m1);
      const float d0 = d * sc0, o0 = dmin * m0, d1 = d * sc1, o1 = dmin * m1;
      for (int l = 0; l < 32; ++l) *y++ = d0 * static_cast<float>(q[l] & 0x0f) - o0;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] >> 4) - o1;
    }
  }
}

void dequantize_q6_k(const block_q6_k* b, float* y, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is] * q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2] * q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4] * q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6] * q4);
      }
    }
  }
}

void quantize_q4_0(const float* x, block_q4_0* b, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0.0f, max = 0.0f; // the value of largest magnitude, with its sign
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int q1 = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q4_1(const float* x, block_q4_1* b, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i, x += 32) {
    const auto [lo, hi] = std::minmax_element(x, x + 32);
    const float d = (*hi - *lo) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    b[i].m = fp32_to_fp16(*lo);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>((x[j] - *lo) * id + 0.5f));
      const int q1 = std::min(15, static_cast<int>((x[j + 16] - *lo) * id + 0.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q8_0(const float* x, block_q8_0* b, uint32_t nb) noexcept {
  for (uint32_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) b[i].qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
  }
}

} // namespace

void dequantize_row(weight_type type, const void* src, float* dst, uint32_t k) noexcept {
  const uint32_t nb = k / block_elems(type);
  switch (type) {
    case weight_type::f32: std::memcpy(dst, src, k * sizeof(float)); return;
    case weight_type::f16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (uint32_t i = 0; i < k; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case weight_type::bf16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (uint32_t i = 0; i < k; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case weight_type::q4_0: dequantize_q4_0(static_cast<const block_q4_0*>(src), dst, nb); return;
    case weight_type::q4_1: dequantize_q4_1(static_cast<const block_q4_1*>(src), dst, nb); return;
    case weight_type::q8_0: dequantize_q8_0(static_cast<const block_q8_0*>(src), dst, nb); return;
    case weight_type::q4_k: dequantize_q4_k(static_cast<const block_q4_k*>(src), dst, nb); return;
    case weight_type::q6_k: dequantize_q6_k(static_cast<const block_q6_k*>(src), dst, nb); return;
  }
}

bool quantize_row(weight_type type, const float* src, void* dst, uint32_t k) noexcept {
  const uint32_t nb = k / block_elems(type);
  switch (type) {
    case weight_type::f32: std::memcpy(dst, src, k * sizeof(float)); return true;
    case weight_type::f16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (uint32_t i = 0; i < k; ++i) h[i] = fp32_to_fp16(src[i]);
      return true;
    }
    case weight_type::bf16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (uint32_t i = 0; i < k; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &src[i], sizeof bits);
        bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even (finite inputs)
        h[i] = static_cast<uint16_t>(bits >> 16);
      }
      return true;
    }
    case weight_type::q4_0: quantize_q4_0(src, static_cast<block_q4_0*>(dst), nb); return true;
    case weight_type::q4_1: quantize_q4_1(src, static_cast<block_q4_1*>(dst), nb); return true;
    case weight_type::q8_0: quantize_q8_0(src, static_cast<block_q8_0*>(dst), nb); return true;
    case weight_type::q4_k:
    case weight_type::q6_k: return false;
  }
  return false;
}

} // namespace dynamo::kernels::ref
