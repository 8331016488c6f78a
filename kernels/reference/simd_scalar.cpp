// Portable inner loops: the fallback path and the definition of what the
// vectorised paths must compute.
#include "kernels/reference/simd_kernels.hpp"

#include "kernels/reference/cpu_features.hpp"
#include "kernels/reference/weight_types.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace dynamo::kernels::ref::detail {
namespace {

void dot_q4_0(const void* w, const block_q8_act* const* x, uint32_t nt, uint32_t nb, float* out) {
  const auto* b = static_cast<const block_q4_0*>(w);
  for (uint32_t t = 0; t < nt; ++t) {
    float acc = 0.0f;
    for (uint32_t i = 0; i < nb; ++i) {
      int32_t sum = 0;
      for (int j = 0; j < 16; ++j) {
        sum += (b[i].qs[j] & 0x0f) * x[t][i].qs[j] + (b[i].qs[j] >> 4) * x[t][i].qs[j + 16];
      }
      // (q - 8) * x = q * x - 8 * x: the offset term rides on s = d * sum(x).
      const float dw = fp16_to_fp32(b[i].d);
      acc += dw * x[t][i].d * static_cast<float>(sum) - 8.0f * dw * x[t][i].s;
    }
    out[t] = acc;
  }
}

void dot_q4_1(const void* w, const block_q8_act* const* x, uint32_t nt, uint32_t nb, float* out) {
  const auto* b = static_cast<const block_q4_1*>(w);
  for (uint32_t t = 0; t < nt; ++t) {
    float acc = 0.0f;
    for (uint32_t i = 0; i < nb; ++i) {
      int32_t sum = 0;
      for (int j = 0; j < 16; ++j) {
        sum += (b[i].qs[j] & 0x0f) * x[t][i].qs[j] + (b[i].qs[j] >> 4) * x[t][i].qs[j + 16];
      }
      acc += fp16_to_fp32(b[i].d) * x[t][i].d * static_cast<float>(sum) +
             fp16_to_fp32(b[i].m) * x[t][i].s;
    }
    out[t] = acc;
  }
}

void dot_q8_0(const void* w, const block_q8_act* const* x, uint32_t nt, uint32_t nb, float* out) {
  const auto* b = static_cast<const block_q8_0*>(w);
  for (uint32_t t = 0; t < nt; ++t) {
    float acc = 0.0f;
    for (uint32_t i = 0; i < nb; ++i) {
      int32_t sum = 0;
      for (int j = 0; j < 32; ++j) sum += b[i].qs[j] * x[t][i].qs[j];
      acc += fp16_to_fp32(b[i].d) * x[t][i].d * static_cast<float>(sum);
    }
    out[t] = acc;
  }
}

void quantize_act(const float* x, block_q8_act* y, uint32_t nb) {
  for (uint32_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = static_cast<int>(std::nearbyint(x[j] * id));
      y[i].qs[j] = static_cast<int8_t>(q);
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
template <void (*Dot)(const void*, const block_q8_act* const*, uint32_t, uint32_t, float*)>
void dot_rows(const void* w, size_t row_bytes, uint32_t n_rows, const block_q8_act* const* x, uint32_t nt,
              uint32_t nb, float* y, size_t y_stride) {
  float out[max_dot_tokens];
  for (uint32_t r = 0; r < n_rows; ++r) {
    Dot(static_cast<const std::byte*>(w) + r * row_bytes, x, nt, nb, out);
    for (uint32_t t = 0; t < nt; ++t) y[t * y_stride + r] = out[t];
  }
}

constexpr kernel_table table{dot_rows<dot_q4_0>, dot_rows<dot_q4_1>, dot_rows<dot_q8_0>, quantize_act, dot_f32,
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
