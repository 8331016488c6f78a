#include "runtime/gguf/dequant.hpp"

#include "runtime/gguf/half.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace dynamo::gguf {

void dequantize_q4_0(const block_q4_0* x, float* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b, y += qk4_0) {
    const float d = fp16_to_fp32(x[b].d);
    for (uint32_t j = 0; j < qk4_0 / 2; ++j) {
      y[j] = d * static_cast<float>((x[b].qs[j] & 0x0F) - 8);
      y[j + qk4_0 / 2] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_q4_1(const block_q4_1* x, float* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b, y += qk4_0) {
    const float d = fp16_to_fp32(x[b].d);
    const float m = fp16_to_fp32(x[b].m);
    for (uint32_t j = 0; j < qk4_0 / 2; ++j) {
      y[j] = d * static_cast<float>(x[b].qs[j] & 0x0F) + m;
      y[j + qk4_0 / 2] = d * static_cast<float>(x[b].qs[j] >> 4) + m;
    }
  }
}

void dequantize_q8_0(const block_q8_0* x, float* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b, y += qk4_0) {
    const float d = fp16_to_fp32(x[b].d);
    for (uint32_t j = 0; j < qk4_0; ++j)
      y[j] = d * static_cast<float>(x[b].qs[j]);
  }
}

namespace {

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K block.
void scale_min_k4(uint32_t j, const uint8_t* s, uint8_t& sc, uint8_t& m) noexcept {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

} // namespace

void dequantize_q4_k(const block_q4_k* x, float* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    const float dmin = fp16_to_fp32(x[b].dmin);
    const uint8_t* q = x[b].qs;
    for (uint32_t chunk = 0; chunk < 4; ++chunk, q += 32) {
      uint8_t sc = 0, m = 0;
      scale_min_k4(2 * chunk, x[b].scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      scale_min_k4(2 * chunk + 1, x[b].scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (uint32_t l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (uint32_t l = 0; l < 32; ++l)
        *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q6_k(const block_q6_k* x, float* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    const uint8_t* ql = x[b].ql;
    const uint8_t* qh = x[b].qh;
    const int8_t* sc = x[b].scales;
    for (uint32_t half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (uint32_t l = 0; l < 32; ++l) {
        const uint32_t is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

namespace {

// Copies whole blocks out of `src` (which may be unaligned in the mapping)
// into an aligned scratch buffer, then runs `fn` on them.
template <class Block, class Fn>
void run_blocks(std::span<const std::byte> src, float* dst, size_t n_blocks, Fn fn) {
  if (reinterpret_cast<uintptr_t>(src.data()) % alignof(Block) == 0) {
    fn(reinterpret_cast<const Block*>(src.data()), dst, n_blocks);
    return;
  }
  std::vector<Block> tmp(n_blocks);
  std::memcpy(tmp.data(), src.data(), n_blocks * sizeof(Block));
  fn(tmp.data(), dst, n_blocks);
}

template <class Word, class Fn>
void run_scalars(std::span<const std::byte> src, float* dst, size_t n, Fn widen) {
  for (size_t i = 0; i < n; ++i) {
    Word w;
    std::memcpy(&w, src.data() + i * sizeof(Word), sizeof(Word));
    dst[i] = widen(w);
  }
}

} // namespace

expected<void> dequantize_row(tensor_type type, std::span<const std::byte> src, std::span<float> dst) {
  if (!can_dequantize(type))
    return make_error(errc::unsupported, "dequantize: tensor type " + type_name(type) + " not supported");
  const auto g = *geometry_of(type);
  const size_t n = dst.size();
  if (n % g.block_elems != 0)
    return make_error(errc::invalid_argument, "dequantize: " + std::to_string(n) + " elements is not a multiple of the " +
                                                  std::string(g.name) + " block size " + std::to_string(g.block_elems));
  const size_t n_blocks = n / g.block_elems;
  if (src.size() < n_blocks * g.block_bytes)
    return make_error(errc::invalid_argument, "dequantize: source has " + std::to_string(src.size()) +
                                                  " bytes, need " + std::to_string(n_blocks * g.block_bytes));
  float* y = dst.data();
  switch (type) {
    case tensor_type::f32: std::memcpy(y, src.data(), n * sizeof(float)); break;
    case tensor_type::f16: run_scalars<uint16_t>(src, y, n, fp16_to_fp32); break;
    case tensor_type::bf16: run_scalars<uint16_t>(src, y, n, bf16_to_fp32); break;
    case tensor_type::q4_0: run_blocks<block_q4_0>(src, y, n_blocks, dequantize_q4_0); break;
    case tensor_type::q4_1: run_blocks<block_q4_1>(src, y, n_blocks, dequantize_q4_1); break;
    case tensor_type::q8_0: run_blocks<block_q8_0>(src, y, n_blocks, dequantize_q8_0); break;
    case tensor_type::q4_k: run_blocks<block_q4_k>(src, y, n_blocks, dequantize_q4_k); break;
    case tensor_type::q6_k: run_blocks<block_q6_k>(src, y, n_blocks, dequantize_q6_k); break;
  }
  return {};
}

} // namespace dynamo::gguf
