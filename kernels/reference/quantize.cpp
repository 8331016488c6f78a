#include "kernels/reference/quantize.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace dynamo::kernels::ref {
namespace {

/// Groups whose largest magnitude is below this are stored as zeros (ggml's GROUP_MAX_EPS).
constexpr float group_max_eps = 1e-15f;

/// Round to nearest, ties to even (ggml's nearest_int).
int nearest_int(float f) noexcept { return static_cast<int>(std::nearbyint(f)); }

/// The value of largest magnitude in x[0..n), with its sign (first one on ties).
float signed_absmax(const float* x, int n) noexcept {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// ---- 32-value blocks --------------------------------------------------------

/// Q4_0 / Q5_0: the signed extreme maps to level 0, so d = max / -2^(bits-1).
template <int Bits, class Block>
void quantize_symmetric(const float* x, Block* y, size_t nb) noexcept {
  constexpr int half = 1 << (Bits - 1), top = (1 << Bits) - 1;
  for (size_t i = 0; i < nb; ++i, x += qk32) {
    const float d = signed_absmax(x, qk32) / static_cast<float>(-half);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (uint32_t j = 0; j < 16; ++j) {
      // x * id lies in [-half, half]: +half + 0.5 is positive, so the cast truncates like ggml's int8 cast.
      const int q0 = std::min(top, static_cast<int>(x[j] * id + (static_cast<float>(half) + 0.5f)));
      const int q1 = std::min(top, static_cast<int>(x[j + 16] * id + (static_cast<float>(half) + 0.5f)));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    if constexpr (Bits == 5) std::memcpy(y[i].qh, &qh, sizeof qh);
  }
}

/// Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), m = min.
template <int Bits, class Block>
void quantize_affine(const float* x, Block* y, size_t nb) noexcept {
  constexpr int top = (1 << Bits) - 1;
  for (size_t i = 0; i < nb; ++i, x += qk32) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (uint32_t j = 0; j < qk32; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / static_cast<float>(top);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (uint32_t j = 0; j < 16; ++j) {
      const int q0 = std::min(top, static_cast<int>((x[j] - min) * id + 0.5f));
      const int q1 = std::min(top, static_cast<int>((x[j + 16] - min) * id + 0.5f));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    if constexpr (Bits == 5) std::memcpy(y[i].qh, &qh, sizeof qh);
  }
}

void quantize_q8_0(const float* x, block_q8_0* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, x += qk32) {
    float amax = 0.0f;
    for (uint32_t j = 0; j < qk32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (uint32_t j = 0; j < qk32; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

// ---- K-quants ---------------------------------------------------------------

/// Levels 0..nmax for x ~ scale * L - min (min >= 0 returned in `the_min`),
/// minimising the weighted squared error over a few trial scales around
/// nmax / (max - min) (ggml's make_qkx2_quants without the MAD option).
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float& the_min, float rmin,
                    float rdelta, int nstep) noexcept {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += w[i] * (diff * diff);
  }
  uint8_t trial[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const float lf = static_cast<float>(l);
      sum_l += w[i] * lf;
      sum_l2 += w[i] * lf * lf;
      sum_xl += w[i] * lf * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * static_cast<float>(trial[i]) + this_min - x[i];
      err += w[i] * (diff * diff);
    }
    if (err < best_error) {
      std::copy(trial, trial + n, L);
      best_error = err;
      scale = this_scale;
      min = this_min;
    }
  }
  the_min = -min;
  return scale;
}

/// Q4_K (Bits 4) and Q5_K (Bits 5): a scale and min per sub-block of 32,
/// both stored as 6-bit multiples of the super-block's d and dmin.
template <int Bits, class Block>
void quantize_k4(const float* x, Block* y, size_t nb) noexcept {
  constexpr int nmax = (1 << Bits) - 1;
  const float rmin = Bits == 4 ? -1.0f : -0.5f;
  const int nstep = Bits == 4 ? 20 : 15;
  for (size_t i = 0; i < nb; ++i, x += qk_k) {
    uint8_t L[qk_k];
    float scales[8], mins[8], weights[32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      const float* xj = x + 32 * j;
      float sum_x2 = 0.0f;
      for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
      const float av_x = std::sqrt(sum_x2 / 32.0f);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xj[l]);
      scales[j] = fit_scale_min(32, nmax, xj, weights, L + 32 * j, mins[j], rmin, 0.1f, nstep);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    Block& b = y[i];
    std::memset(b.scales, 0, sizeof b.scales);
    for (int j = 0; j < 8; ++j) {
      const auto ls = static_cast<uint8_t>(std::min(63, nearest_int(inv_scale * scales[j])));
      const auto lm = static_cast<uint8_t>(std::min(63, nearest_int(inv_min * mins[j])));
      if (j < 4) {
        b.scales[j] = ls;
        b.scales[j + 4] = lm;
      } else {
        b.scales[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
        b.scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        b.scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
      }
    }
    b.d = fp32_to_fp16(max_scale / 63.0f);
    b.dmin = fp32_to_fp16(max_min / 63.0f);
    // Re-quantize every value against the scales as stored.
    for (uint32_t j = 0; j < 8; ++j) {
      uint8_t sc, m;
      scale_min_k4(j, b.scales, sc, m);
      const float d = fp16_to_fp32(b.d) * static_cast<float>(sc);
      if (d == 0.0f) continue;
      const float dm = fp16_to_fp32(b.dmin) * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        L[32 * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
      }
    }
    if constexpr (Bits == 5) std::memset(b.qh, 0, sizeof b.qh);
    for (uint32_t c = 0; c < 4; ++c) {
      for (uint32_t l = 0; l < 32; ++l) {
        const uint8_t lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        b.qs[32 * c + l] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
        if constexpr (Bits == 5) {
          b.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        }
      }
    }
  }
}

/// Signed levels -nmax..nmax-1 for x ~ scale * L, weighted by x^2, trying
/// scales around nmax / |max| (ggml's make_qx_quants, rmse_type 1). L gets
/// the levels offset by nmax.
float fit_symmetric_scale(int n, int nmax, const float* x, int8_t* L) noexcept {
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < group_max_eps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, i);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, i);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, i) + nmax);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

void quantize_q6_k(const float* x, block_q6_k* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, x += qk_k) {
    int8_t L[qk_k];
    float scales[16];
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    for (int s = 0; s < 16; ++s) {
      scales[s] = fit_symmetric_scale(16, 32, x + 16 * s, L + 16 * s);
      if (std::fabs(scales[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    block_q6_k& b = y[i];
    if (max_abs_scale < group_max_eps) {
      std::memset(&b, 0, sizeof b);
      continue;
    }
    const float iscale = -128.0f / max_scale;
    b.d = fp32_to_fp16(1.0f / iscale);
    for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[s])));
    for (int s = 0; s < 16; ++s) {
      const float d = fp16_to_fp32(b.d) * static_cast<float>(b.scales[s]);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * s + l] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * s + l] / d), -32, 31) + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        b.ql[64 * h + l] = static_cast<uint8_t>((Lh[l] & 0x0f) | ((Lh[l + 64] & 0x0f) << 4));
        b.ql[64 * h + l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0x0f) | ((Lh[l + 96] & 0x0f) << 4));
        b.qh[32 * h + l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                                ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

// ---- IQ4 --------------------------------------------------------------------

/// Index of the IQ4_NL level nearest to x.
int nearest_iq4(float x) noexcept {
  if (x <= iq4nl_values[0]) return 0;
  if (x >= iq4nl_values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (x < iq4nl_values[mid] ? hi : lo) = mid;
  }
  return x - iq4nl_values[hi - 1] < iq4nl_values[hi] - x ? hi - 1 : hi;
}

/// Best scale of one 32-value group on the IQ4_NL grid, weighted by x^2,
/// trying 15 scales around max / -127 (ggml's quantize_row_iq4_nl_impl, ntry 7).
float fit_iq4_scale(const float* x) noexcept {
  const float max = signed_absmax(x, 32);
  if (std::fabs(max) < group_max_eps) return 0.0f;
  auto sums = [&](float id, float& sumqx, float& sumq2) {
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = iq4nl_values[nearest_iq4(id * x[j])], w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
  };
  const float d0 = -max / static_cast<float>(iq4nl_values[0]);
  float sumqx, sumq2;
  sums(1.0f / d0, sumqx, sumq2);
  float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int t = -7; t <= 7; ++t) {
    sums((static_cast<float>(t) + static_cast<float>(iq4nl_values[0])) / max, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

/// Nibbles of 32 values at inverse scale id, packed as Q4_0's.
void pack_iq4(const float* x, float id, uint8_t* qs) noexcept {
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>(nearest_iq4(id * x[j]) | (nearest_iq4(id * x[j + 16]) << 4));
  }
}

void quantize_iq4_nl(const float* x, block_iq4_nl* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, x += qk32) {
    const float d = fit_iq4_scale(x);
    y[i].d = fp32_to_fp16(d);
    pack_iq4(x, d != 0.0f ? 1.0f / d : 0.0f, y[i].qs);
  }
}

void quantize_iq4_xs(const float* x, block_iq4_xs* y, size_t nb) noexcept {
  for (size_t i = 0; i < nb; ++i, x += qk_k) {
    float scales[8], max_scale = 0.0f, amax_scale = 0.0f;
    for (int j = 0; j < 8; ++j) {
      scales[j] = fit_iq4_scale(x + 32 * j);
      if (std::fabs(scales[j]) > amax_scale) {
        amax_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    block_iq4_xs& b = y[i];
    const float d = -max_scale / 32.0f;
    b.d = fp32_to_fp16(d);
    b.scales_h = 0;
    std::memset(b.scales_l, 0, sizeof b.scales_l);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 8; ++j) {
      const int l = std::clamp(nearest_int(id * scales[j]), -32, 31);
      const float dl = d * static_cast<float>(l);
      pack_iq4(x + 32 * j, dl != 0.0f ? 1.0f / dl : 0.0f, b.qs + 16 * j);
      const int ls = l + 32;
      b.scales_l[j / 2] |= static_cast<uint8_t>((ls & 0x0f) << (4 * (j % 2)));
      b.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * j));
    }
  }
}

template <class Block>
Block* blocks(void* p) noexcept {
  return static_cast<Block*>(p);
}

} // namespace

bool can_quantize(tensor_type type) noexcept { return is_computed(type); }

bool quantize_row(tensor_type type, const float* x, void* dst, size_t n) noexcept {
  const auto g = geometry_of(type);
  if (!can_quantize(type) || !g || n % g->block_elems != 0) return false;
  const size_t nb = n / g->block_elems;
  switch (type) {
    case tensor_type::f32: std::memcpy(dst, x, n * sizeof(float)); break;
    case tensor_type::f16:
      for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = fp32_to_fp16(x[i]);
      break;
    case tensor_type::bf16:
      for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = fp32_to_bf16(x[i]);
      break;
    case tensor_type::q4_0: quantize_symmetric<4>(x, blocks<block_q4_0>(dst), nb); break;
    case tensor_type::q5_0: quantize_symmetric<5>(x, blocks<block_q5_0>(dst), nb); break;
    case tensor_type::q4_1: quantize_affine<4>(x, blocks<block_q4_1>(dst), nb); break;
    case tensor_type::q5_1: quantize_affine<5>(x, blocks<block_q5_1>(dst), nb); break;
    case tensor_type::q8_0: quantize_q8_0(x, blocks<block_q8_0>(dst), nb); break;
    case tensor_type::q4_k: quantize_k4<4>(x, blocks<block_q4_k>(dst), nb); break;
    case tensor_type::q5_k: quantize_k4<5>(x, blocks<block_q5_k>(dst), nb); break;
    case tensor_type::q6_k: quantize_q6_k(x, blocks<block_q6_k>(dst), nb); break;
    case tensor_type::iq4_nl: quantize_iq4_nl(x, blocks<block_iq4_nl>(dst), nb); break;
    case tensor_type::iq4_xs: quantize_iq4_xs(x, blocks<block_iq4_xs>(dst), nb); break;
  }
  return true;
}

} // namespace dynamo::kernels::ref
