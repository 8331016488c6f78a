#include "kernels/reference/dequantize.hpp"

#include <cstring>

namespace dynamo::kernels::ref {
namespace {

/// Bit 4 of element j (0..31) of a Q5_0/Q5_1 block.
uint32_t q5_high_bits(const uint8_t* qh) noexcept {
  uint32_t h;
  std::memcpy(&h, qh, sizeof h);
  return h;
}

void dequantize_q4_0(const block_q4_0* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, y += qk32) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 0x0f) - 8);
      y[j + 16] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_q4_1(const block_q4_1* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, y += qk32) {
    const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(b[i].qs[j] & 0x0f) + m;
      y[j + 16] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
    }
  }
}

void dequantize_q5_0(const block_q5_0* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, y += qk32) {
    const float d = fp16_to_fp32(b[i].d);
    const uint32_t h = q5_high_bits(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int q0 = (b[i].qs[j] & 0x0f) | static_cast<int>(((h >> j) & 1u) << 4);
      const int q1 = (b[i].qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4);
      y[j] = d * static_cast<float>(q0 - 16);
      y[j + 16] = d * static_cast<float>(q1 - 16);
    }
  }
}

void dequantize_q5_1(const block_q5_1* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, y += qk32) {
    const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
    const uint32_t h = q5_high_bits(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int q0 = (b[i].qs[j] & 0x0f) | static_cast<int>(((h >> j) & 1u) << 4);
      const int q1 = (b[i].qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4);
      y[j] = d * static_cast<float>(q0) + m;
      y[j + 16] = d * static_cast<float>(q1) + m;
    }
  }
}

void dequantize_q8_0(const block_q8_0* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, y += qk32) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

/// Q4_K and Q5_K: four chunks of 64 values, each two sub-blocks (low, then
/// high nibbles of the chunk's 32 bytes); Q5_K adds bit j of qh[l] as bit 4.
template <class Block>
void dequantize_k4(const Block* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (uint32_t c = 0; c < 4; ++c, q += 32) {
      for (uint32_t half = 0; half < 2; ++half) {
        const uint32_t j = 2 * c + half;
        uint8_t sc, m;
        scale_min_k4(j, b[i].scales, sc, m);
        const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
        for (uint32_t l = 0; l < 32; ++l) {
          int v = half == 0 ? (q[l] & 0x0f) : (q[l] >> 4);
          if constexpr (sizeof(Block) == sizeof(block_q5_k)) v |= ((b[i].qh[l] >> j) & 1) << 4;
          *y++ = dj * static_cast<float>(v) - mj;
        }
      }
    }
  }
}

void dequantize_q6_k(const block_q6_k* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    // Two halves of 128; in each, element l + 32 g (g = 0..3) takes nibble
    // g / 2 of ql[l + 32 (g % 2)], bits 2g..2g+1 of qh[l] and scale sc[l / 16 + 2 g].
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int g = 0; g < 4; ++g) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t lo = ql[l + 32 * (g % 2)];
          const int q = ((g < 2 ? lo & 0x0f : lo >> 4) | (((qh[l] >> (2 * g)) & 3) << 4)) - 32;
          y[l + 32 * g] = d * static_cast<float>(sc[l / 16 + 2 * g] * q);
        }
      }
    }
  }
}

void dequantize_iq4_nl(const block_iq4_nl* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, y += qk32) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(iq4nl_values[b[i].qs[j] & 0x0f]);
      y[j + 16] = d * static_cast<float>(iq4nl_values[b[i].qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const block_iq4_xs* b, float* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (uint32_t j = 0; j < 8; ++j, y += 32) {
      const int ls = ((b[i].scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((b[i].scales_h >> (2 * j)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* qs = b[i].qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * static_cast<float>(iq4nl_values[qs[l] & 0x0f]);
        y[l + 16] = dl * static_cast<float>(iq4nl_values[qs[l] >> 4]);
      }
    }
  }
}

template <class Block>
const Block* blocks(const void* p) noexcept {
  return static_cast<const Block*>(p);
}

} // namespace

void dequantize_row(tensor_type type, const void* src, float* dst, size_t n) noexcept {
  switch (type) {
    case tensor_type::f32: std::memcpy(dst, src, n * sizeof(float)); return;
    case tensor_type::f16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case tensor_type::bf16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case tensor_type::q4_0: dequantize_q4_0(blocks<block_q4_0>(src), dst, n / qk32); return;
    case tensor_type::q4_1: dequantize_q4_1(blocks<block_q4_1>(src), dst, n / qk32); return;
    case tensor_type::q5_0: dequantize_q5_0(blocks<block_q5_0>(src), dst, n / qk32); return;
    case tensor_type::q5_1: dequantize_q5_1(blocks<block_q5_1>(src), dst, n / qk32); return;
    case tensor_type::q8_0: dequantize_q8_0(blocks<block_q8_0>(src), dst, n / qk32); return;
    case tensor_type::q4_k: dequantize_k4(blocks<block_q4_k>(src), dst, n / qk_k); return;
    case tensor_type::q5_k: dequantize_k4(blocks<block_q5_k>(src), dst, n / qk_k); return;
    case tensor_type::q6_k: dequantize_q6_k(blocks<block_q6_k>(src), dst, n / qk_k); return;
    case tensor_type::iq4_nl: dequantize_iq4_nl(blocks<block_iq4_nl>(src), dst, n / qk32); return;
    case tensor_type::iq4_xs: dequantize_iq4_xs(blocks<block_iq4_xs>(src), dst, n / qk_k); return;
  }
}

} // namespace dynamo::kernels::ref
