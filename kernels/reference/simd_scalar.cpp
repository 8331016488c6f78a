// Portable inner loops: the fallback path and the definition of what the
// vectorised paths must compute.
#include "kernels/reference/simd_kernels.hpp"

#include "kernels/reference/cpu_features.hpp"
#include "kernels/reference/tensor_type.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace dynamo::kernels::ref::detail {
namespace {

/// The vector paths' arithmetic, one lane at a time. A block's 32 products
/// go to 8 exact int32 lane sums (lane l: elements 2l, 2l+1, 16+2l, 17+2l);
/// each lane is converted to float and fused-multiply-added with the block's
/// scale into the accumulator of the block's parity. Nothing here may be
/// reordered: the SIMD paths must produce the same bits.
struct lane_accumulator {
  float acc[2][8] = {};

  void add(uint32_t block, float scale, const int32_t* w, const int16_t* x) {
    for (int l = 0; l < 8; ++l) {
      const int32_t p = w[2 * l] * x[2 * l] + w[2 * l + 1] * x[2 * l + 1] + w[16 + 2 * l] * x[16 + 2 * l] +
                        w[17 + 2 * l] * x[17 + 2 * l];
      acc[block & 1][l] = std::fma(scale, static_cast<float>(p), acc[block & 1][l]);
    }
  }

  /// The vector paths' horizontal sum of acc[0] + acc[1].
  [[nodiscard]] float sum() const {
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = acc[0][l] + acc[1][l];
    float h[4];
    for (int l = 0; l < 4; ++l) h[l] = v[l] + v[l + 4];
    return (h[0] + h[2]) + (h[1] + h[3]);
  }
};

/// Q4_0 (m = -8 d) and Q4_1 (y = d q + m): the offset m rides on the
/// activation block's s = d_x * sum(q_x), in two parity accumulators too.
template <bool Q4_1>
void dot_q4(const void* w, const block_q16_act* const* x, uint32_t nt, uint32_t nb, float* out) {
  for (uint32_t t = 0; t < nt; ++t) {
    lane_accumulator acc;
    float off[2] = {0.0f, 0.0f};
    for (uint32_t i = 0; i < nb; ++i) {
      float d, m;
      const uint8_t* qs;
      if constexpr (Q4_1) {
        const auto& b = static_cast<const block_q4_1*>(w)[i];
        d = fp16_to_fp32(b.d);
        m = fp16_to_fp32(b.m);
        qs = b.qs;
      } else {
        const auto& b = static_cast<const block_q4_0*>(w)[i];
        d = fp16_to_fp32(b.d);
        m = d * -8.0f;
        qs = b.qs;
      }
      int32_t q[32];
      for (int j = 0; j < 16; ++j) {
        q[j] = qs[j] & 0x0f;
        q[j + 16] = qs[j] >> 4;
      }
      const block_q16_act& a = x[t][i];
      acc.add(i, d * a.d, q, a.qs);
      off[i & 1] += m * a.s;
    }
    out[t] = acc.sum() + (off[0] + off[1]);
  }
}

void dot_q8_0(const void* w, const block_q16_act* const* x, uint32_t nt, uint32_t nb, float* out) {
  const auto* b = static_cast<const block_q8_0*>(w);
  for (uint32_t t = 0; t < nt; ++t) {
    lane_accumulator acc;
    for (uint32_t i = 0; i < nb; ++i) {
      int32_t q[32];
      for (int j = 0; j < 32; ++j) q[j] = b[i].qs[j];
      acc.add(i, fp16_to_fp32(b[i].d) * x[t][i].d, q, x[t][i].qs);
    }
    out[t] = acc.sum();
  }
}

void quantize_act(const float* x, block_q16_act* y, uint32_t nb) {
  for (uint32_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 32767.0f;
    const float id = amax != 0.0f ? 32767.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = static_cast<int>(std::nearbyint(x[j] * id));
      y[i].qs[j] = static_cast<int16_t>(q);
      sum += q;
    }
    y[i].d = d;
    y[i].s = d * static_cast<float>(sum);
  }
}

float dot_f32(const float* a, const float* b, uint32_t n) {
  float acc = 0.0f;
  for (uint32_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

void axpy_f32(float a, const float* x, float* y, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void store_f16(const float* x, uint16_t* y, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void load_f16(const uint16_t* x, float* y, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

/// The row loop around a one-row kernel.
template <void (*Dot)(const void*, const block_q16_act* const*, uint32_t, uint32_t, float*)>
void dot_rows(const void* w, size_t row_bytes, uint32_t n_rows, const block_q16_act* const* x, uint32_t nt,
              uint32_t nb, float* y, size_t y_stride) {
  float out[max_dot_tokens];
  for (uint32_t r = 0; r < n_rows; ++r) {
    Dot(static_cast<const std::byte*>(w) + r * row_bytes, x, nt, nb, out);
    for (uint32_t t = 0; t < nt; ++t) y[t * y_stride + r] = out[t];
  }
}

constexpr kernel_table table{dot_rows<dot_q4<false>>, dot_rows<dot_q4<true>>, dot_rows<dot_q8_0>, quantize_act, dot_f32,
                             axpy_f32, store_f16, load_f16};

} // namespace

const kernel_table& scalar_kernels() noexcept { return table; }

const kernel_table& active_kernels() noexcept {
  switch (active_isa()) {
    case cpu_isa::avx2_vnni:
      if (const auto* k = avx2_vnni_kernels()) return *k;
      [[fallthrough]];
    case cpu_isa::avx2:
      if (const auto* k = avx2_kernels()) return *k;
      [[fallthrough]];
    case cpu_isa::scalar: break;
  }
  return table;
}

} // namespace dynamo::kernels::ref::detail
