// Portable inner loops: the fallback path and the definition of what the
// vectorised paths must compute, bit for bit.
#include "kernels/reference/simd_kernels.hpp"

#include "kernels/reference/cpu_features.hpp"
#include "kernels/reference/exp_lanes.hpp"
#include "kernels/reference/repack.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

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
  [[nodiscard]] float sum() const { return tree_sum(acc[0], acc[1]); }

  [[nodiscard]] static float tree_sum(const float* a, const float* b) {
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = a[l] + b[l];
    float h[4];
    for (int l = 0; l < 4; ++l) h[l] = v[l] + v[l + 4];
    return (h[0] + h[2]) + (h[1] + h[3]);
  }
};

/// One 32-value block as the integer dot sees it: value = dw * q + mw.
struct int_block {
  int32_t q[32];
  float dw = 0.0f;
  float mw = 0.0f; ///< used by the types whose Offset is true
};

/// Bit 4 of the elements of a Q5_0/Q5_1 block.
void add_q5_high_bits(const uint8_t* qh, int32_t* q) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof h);
  for (int j = 0; j < 32; ++j) q[j] |= static_cast<int32_t>(((h >> j) & 1u) << 4);
}

void unpack_nibbles(const uint8_t* qs, int32_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0x0f;
    q[j + 16] = qs[j] >> 4;
  }
}

// Per type: decode 32-value block i of a row. Offset types (y = dw q + mw):
// Q4_0 (mw = -8 d), Q4_1, Q5_0 (mw = -16 d), Q5_1, Q4_K, Q5_K. The others
// have mw = 0 and skip the offset sums.

struct q4_0_fmt {
  // Unused (Q4_0's dots fold the offset into the integers): clang 14 -Werror says so.
  [[maybe_unused]] static constexpr bool offset = true;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_q4_0*>(row)[i];
    b.dw = fp16_to_fp32(x.d);
    b.mw = b.dw * -8.0f;
    unpack_nibbles(x.qs, b.q);
  }
};

struct q4_1_fmt {
  static constexpr bool offset = true;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_q4_1*>(row)[i];
    b.dw = fp16_to_fp32(x.d);
    b.mw = fp16_to_fp32(x.m);
    unpack_nibbles(x.qs, b.q);
  }
};

struct q5_0_fmt {
  static constexpr bool offset = true;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_q5_0*>(row)[i];
    b.dw = fp16_to_fp32(x.d);
    b.mw = b.dw * -16.0f;
    unpack_nibbles(x.qs, b.q);
    add_q5_high_bits(x.qh, b.q);
  }
};

struct q5_1_fmt {
  static constexpr bool offset = true;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_q5_1*>(row)[i];
    b.dw = fp16_to_fp32(x.d);
    b.mw = fp16_to_fp32(x.m);
    unpack_nibbles(x.qs, b.q);
    add_q5_high_bits(x.qh, b.q);
  }
};

struct q8_0_fmt {
  static constexpr bool offset = false;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_q8_0*>(row)[i];
    b.dw = fp16_to_fp32(x.d);
    for (int j = 0; j < 32; ++j) b.q[j] = x.qs[j];
  }
};

/// Q4_K / Q5_K sub-block j = i % 8 of super-block i / 8: dw = d * sc_j,
/// mw = dmin * -m_j; the quants are the low (even j) or high (odd j) nibbles
/// of qs[32 (j / 2), +32), plus bit j of qh[l] as bit 4 for Q5_K.
template <class Block>
struct k4_fmt {
  static constexpr bool offset = true;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const Block*>(row)[i / 8];
    const uint32_t j = i % 8;
    uint8_t sc, m;
    scale_min_k4(j, x.scales, sc, m);
    b.dw = fp16_to_fp32(x.d) * static_cast<float>(sc);
    b.mw = fp16_to_fp32(x.dmin) * -static_cast<float>(m);
    const uint8_t* q = x.qs + 32 * (j / 2);
    for (int l = 0; l < 32; ++l) {
      b.q[l] = (q[l] >> (4 * (j % 2))) & 0x0f;
      if constexpr (sizeof(Block) == sizeof(block_q5_k)) b.q[l] |= ((x.qh[l] >> j) & 1) << 4;
    }
  }
};

/// Q6_K block j = i % 8 (half h = j / 4, quadrant g = j % 4): q = sc * (q6 -
/// 32) with sc = scales[2j] for elements 0..15 and scales[2j + 1] for 16..31
/// (|q| <= 4096), dw = d.
struct q6_k_fmt {
  static constexpr bool offset = false;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_q6_k*>(row)[i / 8];
    const uint32_t j = i % 8, h = j / 4, g = j % 4;
    b.dw = fp16_to_fp32(x.d);
    for (uint32_t l = 0; l < 32; ++l) {
      const uint8_t lo = x.ql[64 * h + l + 32 * (g % 2)];
      const int q6 = ((g < 2 ? lo & 0x0f : lo >> 4) | (((x.qh[32 * h + l] >> (2 * g)) & 3) << 4)) - 32;
      b.q[l] = x.scales[2 * j + l / 16] * q6;
    }
  }
};

struct iq4_nl_fmt {
  static constexpr bool offset = false;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_iq4_nl*>(row)[i];
    b.dw = fp16_to_fp32(x.d);
    unpack_nibbles(x.qs, b.q);
    for (int& q : b.q) q = iq4nl_values[q];
  }
};

/// IQ4_XS sub-block j = i % 8: dw = d * (ls_j - 32).
struct iq4_xs_fmt {
  static constexpr bool offset = false;
  static void decode(const void* row, uint32_t i, int_block& b) {
    const auto& x = static_cast<const block_iq4_xs*>(row)[i / 8];
    const uint32_t j = i % 8;
    const int ls = ((x.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((x.scales_h >> (2 * j)) & 3) << 4);
    b.dw = fp16_to_fp32(x.d) * static_cast<float>(ls - 32);
    unpack_nibbles(x.qs + 16 * j, b.q);
    for (int& q : b.q) q = iq4nl_values[q];
  }
};

template <class F>
void dot_q(const void* w, const block_q16_act* const* x, uint32_t nt, uint32_t nb, float* out) {
  for (uint32_t t = 0; t < nt; ++t) {
    lane_accumulator acc;
    float off[2] = {0.0f, 0.0f};
    for (uint32_t i = 0; i < nb; ++i) {
      int_block b;
      F::decode(w, i, b);
      const block_q16_act& a = x[t][i];
      acc.add(i, b.dw * a.d, b.q, a.qs);
      if constexpr (F::offset) off[i & 1] += b.mw * a.s;
    }
    out[t] = F::offset ? acc.sum() + (off[0] + off[1]) : acc.sum();
  }
}

// ---- byte-lane types against split activations ----------------------------------

/// Q4_0 as the byte-lane kernels see it: w = q - 8, no offset term.
struct q4_0_split {
  static constexpr bool offset = false;
  static void decode(const void* row, uint32_t i, int_block& b) {
    q4_0_fmt::decode(row, i, b);
    for (int& q : b.q) q -= 8;
  }
};

/// Lane l of the byte-lane kernels: elements 4l..4l+3, exact.
int32_t lane_sum(const int32_t* w, const block_q16_split& x, int l) {
  int32_t p = 0;
  for (int e = 4 * l; e < 4 * l + 4; ++e) p += w[e] * (256 * x.hi[e] + x.lo[e]);
  return p;
}

float tree8(const float* v) {
  float h[4];
  for (int l = 0; l < 4; ++l) h[l] = v[l] + v[l + 4];
  return (h[0] + h[2]) + (h[1] + h[3]);
}

template <class F>
void dot_s_rows(const void* w, size_t row_bytes, uint32_t n_rows, const act_split* x, uint32_t nt, uint32_t nb,
                float* y, size_t y_stride) {
  for (uint32_t r = 0; r < n_rows; ++r) {
    const void* row = static_cast<const std::byte*>(w) + r * row_bytes;
    for (uint32_t t = 0; t < nt; ++t) {
      float acc[2][8] = {}, off[8] = {};
      for (uint32_t i = 0; i < nb; ++i) {
        int_block b;
        F::decode(row, i, b);
        const float c = b.dw * x[t].d[i];
        for (int l = 0; l < 8; ++l) {
          acc[i & 1][l] = std::fma(c, static_cast<float>(lane_sum(b.q, x[t].b[i], l)), acc[i & 1][l]);
        }
        if constexpr (F::offset) off[i % 8] = std::fma(b.mw, x[t].s[i], off[i % 8]);
      }
      const float sum = lane_accumulator::tree_sum(acc[0], acc[1]);
      y[t * y_stride + r] = F::offset ? sum + tree8(off) : sum;
    }
  }
}

/// Sub-block j's exact int32 dot over the lane vectors v0..v1-1: weight(v, b)
/// is the integer weight at byte b = 4j + e of vector v.
template <class Weight>
int32_t lanes_sum(const block_q16_lanes& x, uint32_t j, uint32_t v0, uint32_t v1, Weight weight) {
  int32_t p = 0;
  for (uint32_t v = v0; v < v1; ++v) {
    for (uint32_t b = 4 * j; b < 4 * j + 4; ++b) p += weight(v, b) * (256 * x.hi[v][b] + x.lo[v][b]);
  }
  return p;
}

/// One group g (8 blocks, or a super-block) of a lane-layout row into acc
/// (the dot_l_fn contract).
void lanes_q4_0(const block_q4_0_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  for (uint32_t j = 0; j < 8; ++j) {
    const int32_t s = lanes_sum(x.b[g], j, 0, 8, [&](uint32_t v, uint32_t b) {
      return static_cast<int>((w.qs[32 * (v / 2) + b] >> (4 * (v % 2))) & 0x0f) - 8;
    });
    acc[j] = std::fma(fp16_to_fp32(w.d[j]) * x.d[8 * g + j], static_cast<float>(s), acc[j]);
  }
}

/// Block j's exact dot of the IQ4 levels indexed by the lane nibbles at qs.
int32_t iq4_lanes_sum(const uint8_t* qs, const block_q16_lanes& x, uint32_t j) {
  return lanes_sum(x, j, 0, 8, [&](uint32_t v, uint32_t b) {
    return static_cast<int>(iq4nl_values[(qs[32 * (v / 2) + b] >> (4 * (v % 2))) & 0x0f]);
  });
}

void lanes_iq4_nl(const block_iq4_nl_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  for (uint32_t j = 0; j < 8; ++j) {
    const float s = static_cast<float>(iq4_lanes_sum(w.qs, x.b[g], j));
    acc[j] = std::fma(fp16_to_fp32(w.d[j]) * x.d[8 * g + j], s, acc[j]);
  }
}

/// The 4-bit quant of vector v, byte b of a nibble lane array, plus the
/// fifth bit from a Q5 lane qh (null: none).
int lane_q(const uint8_t* qs, const uint8_t* qh, uint32_t v, uint32_t b) {
  const int q = (qs[32 * (v / 2) + b] >> (4 * (v % 2))) & 0x0f;
  return qh == nullptr ? q : q | (((qh[b] >> v) & 1) << 4);
}

/// Q4_1 and Q5_1 (qh null for Q4_1): value d_j q + m_j.
void lanes_dm(const uint16_t* d, const uint16_t* m, const uint8_t* qs, const uint8_t* qh, const act_lanes& x,
              uint32_t g, float* acc) {
  for (uint32_t j = 0; j < 8; ++j) {
    const int32_t s = lanes_sum(x.b[g], j, 0, 8, [&](uint32_t v, uint32_t b) { return lane_q(qs, qh, v, b); });
    acc[j] = std::fma(fp16_to_fp32(d[j]) * x.d[8 * g + j], static_cast<float>(s), acc[j]);
    acc[j] = std::fma(fp16_to_fp32(m[j]), x.s[8 * g + j], acc[j]);
  }
}

void lanes_q4_1(const block_q4_1_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  lanes_dm(w.d, w.m, w.qs, nullptr, x, g, acc);
}

void lanes_q5_1(const block_q5_1_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  lanes_dm(w.d, w.m, w.qs, w.qh, x, g, acc);
}

void lanes_q5_0(const block_q5_0_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  for (uint32_t j = 0; j < 8; ++j) {
    const int32_t s = lanes_sum(x.b[g], j, 0, 8, [&](uint32_t v, uint32_t b) { return lane_q(w.qs, w.qh, v, b) - 16; });
    acc[j] = std::fma(fp16_to_fp32(w.d[j]) * x.d[8 * g + j], static_cast<float>(s), acc[j]);
  }
}

void lanes_q8_0(const block_q8_0_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  for (uint32_t j = 0; j < 8; ++j) {
    const int32_t s = lanes_sum(x.b[g], j, 0, 8, [&](uint32_t v, uint32_t b) { return int{w.qs[32 * v + b]}; });
    acc[j] = std::fma(fp16_to_fp32(w.d[j]) * x.d[8 * g + j], static_cast<float>(s), acc[j]);
  }
}

void lanes_iq4_xs(const block_iq4_xs_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  const float d = fp16_to_fp32(w.d);
  for (uint32_t j = 0; j < 8; ++j) {
    const float s = static_cast<float>(iq4_lanes_sum(w.qs, x.b[g], j));
    acc[j] = std::fma(d * static_cast<float>(w.sc[j]) * x.d[8 * g + j], s, acc[j]);
  }
}

/// Q4_K, and Q5_K with its fifth bits qh (null for Q4_K).
void lanes_k4(const block_q4_k_lanes& w, const uint8_t* qh, const act_lanes& x, uint32_t g, float* acc) {
  const float d = fp16_to_fp32(w.d), dmin = fp16_to_fp32(w.dmin);
  for (uint32_t j = 0; j < 8; ++j) {
    const int32_t s = lanes_sum(x.b[g], j, 0, 8, [&](uint32_t v, uint32_t b) {
      const int q = (w.qs[32 * (v / 2) + b] >> (4 * (v % 2))) & 0x0f;
      return qh == nullptr ? q : q | (((qh[b] >> v) & 1) << 4);
    });
    const float c = d * static_cast<float>(w.sc[j]) * x.d[8 * g + j];
    acc[j] = std::fma(c, static_cast<float>(s), acc[j]);
    acc[j] = std::fma(dmin * -static_cast<float>(w.m[j]), x.s[8 * g + j], acc[j]);
  }
}

void lanes_q4_k(const block_q4_k_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  lanes_k4(w, nullptr, x, g, acc);
}

void lanes_q5_k(const block_q5_k_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  lanes_k4(w.low, w.qh, x, g, acc);
}

void lanes_q6_k(const block_q6_k_lanes& w, const act_lanes& x, uint32_t g, float* acc) {
  const float d = fp16_to_fp32(w.d);
  for (uint32_t j = 0; j < 8; ++j) {
    for (uint32_t h = 0; h < 2; ++h) {
      const int32_t s = lanes_sum(x.b[g], j, 4 * h, 4 * h + 4, [&](uint32_t v, uint32_t b) {
        const int lo = (w.ql[32 * (v / 2) + b] >> (4 * (v % 2))) & 0x0f;
        const int hi = (w.qh[32 * (v / 4) + b] >> (2 * (v % 4))) & 3;
        return (lo | (hi << 4)) - 32;
      });
      const float c = d * static_cast<float>(w.sc[8 * h + j]) * x.d[8 * g + j];
      acc[j] = std::fma(c, static_cast<float>(s), acc[j]);
    }
  }
}

/// The tail of a lane row of a 32-value block type: its nb % 8 = m last
/// blocks in the row layout at `tail` as one more group (F decodes them;
/// Bias turns q into the lane kernels' integer weight; Offset: fma(mw, s_x)).
template <class F, int Bias, bool Offset>
void lanes_tail(const void* tail, const act_lanes& x, uint32_t i0, uint32_t m, float* acc) {
  float c[8] = {}, s[8] = {}, mw[8] = {}, sx[8] = {};
  for (uint32_t j = 0; j < m; ++j) {
    int_block b;
    F::decode(tail, j, b);
    int32_t sum = 0;
    for (int e = 0; e < 32; ++e) sum += (b.q[e] + Bias) * x.q[i0 + j].qs[e];
    c[j] = b.dw * x.d[i0 + j];
    s[j] = static_cast<float>(sum);
    mw[j] = b.mw;
    sx[j] = x.s[i0 + j];
  }
  for (uint32_t j = 0; j < 8; ++j) {
    acc[j] = std::fma(c[j], s[j], acc[j]);
    if constexpr (Offset) acc[j] = std::fma(mw[j], sx[j], acc[j]);
  }
}

using tail_fn = void (*)(const void*, const act_lanes&, uint32_t, uint32_t, float*);

template <class Block, void (*Super)(const Block&, const act_lanes&, uint32_t, float*), tail_fn Tail = nullptr>
void dot_l_rows(const void* w, size_t row_bytes, uint32_t n_rows, const act_lanes* x, uint32_t nt, uint32_t nb,
                float* y, size_t y_stride) {
  for (uint32_t r = 0; r < n_rows; ++r) {
    const auto* row = reinterpret_cast<const Block*>(static_cast<const std::byte*>(w) + r * row_bytes);
    for (uint32_t t = 0; t < nt; ++t) {
      float acc[8] = {};
      for (uint32_t g = 0; g < nb / 8; ++g) Super(row[g], x[t], g, acc);
      if constexpr (Tail != nullptr) {
        if (nb % 8 != 0) Tail(row + nb / 8, x[t], nb / 8 * 8, nb % 8, acc);
      }
      y[t * y_stride + r] = tree8(acc);
    }
  }
}

/// The row loop around a one-row kernel.
template <class F>
void dot_q_rows(const void* w, size_t row_bytes, uint32_t n_rows, const block_q16_act* const* x, uint32_t nt,
                uint32_t nb, float* y, size_t y_stride) {
  float out[max_dot_tokens];
  for (uint32_t r = 0; r < n_rows; ++r) {
    dot_q<F>(static_cast<const std::byte*>(w) + r * row_bytes, x, nt, nb, out);
    for (uint32_t t = 0; t < nt; ++t) y[t * y_stride + r] = out[t];
  }
}

// ---- float rows ---------------------------------------------------------------

float widen_f32(const void* w, uint32_t i) { return static_cast<const float*>(w)[i]; }
float widen_f16(const void* w, uint32_t i) { return fp16_to_fp32(static_cast<const uint16_t*>(w)[i]); }
float widen_bf16(const void* w, uint32_t i) { return bf16_to_fp32(static_cast<const uint16_t*>(w)[i]); }

template <float (*Widen)(const void*, uint32_t)>
void dot_f_rows(const void* w, size_t row_bytes, uint32_t n_rows, const float* const* x, uint32_t nt, uint32_t k,
                float* y, size_t y_stride) {
  for (uint32_t r = 0; r < n_rows; ++r) {
    const void* row = static_cast<const std::byte*>(w) + r * row_bytes;
    for (uint32_t t = 0; t < nt; ++t) {
      float acc[2][8] = {};
      uint32_t i = 0;
      for (; i + 16 <= k; i += 16) {
        for (uint32_t l = 0; l < 8; ++l) {
          acc[0][l] = std::fma(Widen(row, i + l), x[t][i + l], acc[0][l]);
          acc[1][l] = std::fma(Widen(row, i + 8 + l), x[t][i + 8 + l], acc[1][l]);
        }
      }
      float s = lane_accumulator::tree_sum(acc[0], acc[1]);
      for (; i < k; ++i) s = std::fma(Widen(row, i), x[t][i], s);
      y[t * y_stride + r] = s;
    }
  }
}

// ---- the rest -------------------------------------------------------------------

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

/// A row element as fp32 (fp16: exact).
float as_f32(float x) { return x; }
float as_f32(uint16_t x) { return fp16_to_fp32(x); }

template <class T>
float dot_t(const float* a, const T* b, uint32_t n) {
  float acc = 0.0f;
  for (uint32_t i = 0; i < n; ++i) acc += a[i] * as_f32(b[i]);
  return acc;
}

float dot(const float* a, const float* b, uint32_t n) { return dot_t(a, b, n); }

template <class T>
void axpy_t(float a, const T* x, float* y, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) y[i] += a * as_f32(x[i]);
}

void axpy_f32(float a, const float* x, float* y, uint32_t n) { axpy_t(a, x, y, n); }

template <class T>
void dot_rows(const float* const* q, uint32_t n_q, const T* k, size_t k_stride, uint32_t n_rows, uint32_t n,
              float scale, float* const* out) {
  for (uint32_t t = 0; t < n_q; ++t)
    for (uint32_t j = 0; j < n_rows; ++j) out[t][j] = dot_t(q[t], k + j * k_stride, n) * scale;
}

template <class T>
void axpy_rows(const float* const* p, uint32_t n_q, const T* v, size_t v_stride, uint32_t n_rows, float* const* y,
               uint32_t n) {
  for (uint32_t t = 0; t < n_q; ++t)
    for (uint32_t j = 0; j < n_rows; ++j) axpy_t(p[t][j], v + j * v_stride, y[t], n);
}

using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = int32_t __attribute__((vector_size(16)));

void swiglu_row(const float* g, const float* u, float* o, uint32_t n) { swiglu_lanes<f32x4, i32x4>(g, u, o, n); }

void exp_row(float* x, uint32_t n, float m) { exp_sub_lanes<f32x4, i32x4>(x, n, m); }

void store_f16(const float* x, uint16_t* y, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

constexpr kernel_table table{dot_q_rows<q4_1_fmt>,
                             dot_q_rows<q5_0_fmt>,
                             dot_q_rows<q5_1_fmt>,
                             dot_q_rows<q8_0_fmt>,
                             dot_q_rows<k4_fmt<block_q5_k>>,
                             dot_q_rows<iq4_nl_fmt>,
                             dot_s_rows<q4_0_split>,
                             dot_s_rows<k4_fmt<block_q4_k>>,
                             dot_s_rows<q6_k_fmt>,
                             dot_s_rows<iq4_xs_fmt>,
                             dot_l_rows<block_q4_0_lanes, lanes_q4_0, lanes_tail<q4_0_fmt, -8, false>>,
                             dot_l_rows<block_iq4_nl_lanes, lanes_iq4_nl, lanes_tail<iq4_nl_fmt, 0, false>>,
                             dot_l_rows<block_q8_0_lanes, lanes_q8_0, lanes_tail<q8_0_fmt, 0, false>>,
                             dot_l_rows<block_iq4_xs_lanes, lanes_iq4_xs>,
                             dot_l_rows<block_q4_k_lanes, lanes_q4_k>,
                             dot_l_rows<block_q5_k_lanes, lanes_q5_k>,
                             dot_l_rows<block_q6_k_lanes, lanes_q6_k>,
                             dot_l_rows<block_q4_1_lanes, lanes_q4_1, lanes_tail<q4_1_fmt, 0, true>>,
                             dot_l_rows<block_q5_0_lanes, lanes_q5_0, lanes_tail<q5_0_fmt, -16, false>>,
                             dot_l_rows<block_q5_1_lanes, lanes_q5_1, lanes_tail<q5_1_fmt, 0, true>>,
                             dot_f_rows<widen_f32>,
                             dot_f_rows<widen_f16>,
                             dot_f_rows<widen_bf16>,
                             quantize_act,
                             dot,
                             axpy_f32,
                             dot_rows<float>,
                             axpy_rows<float>,
                             exp_row,
                             swiglu_row,
                             store_f16,
                             dot_rows<uint16_t>,
                             axpy_rows<uint16_t>};

} // namespace

void split_act(const block_q16_act* x, uint32_t nb, block_q16_split* b, float* d, float* s) noexcept {
  for (uint32_t i = 0; i < nb; ++i) {
    for (int e = 0; e < 32; ++e) {
      const int q = x[i].qs[e];
      b[i].lo[e] = static_cast<uint8_t>(q & 0xff);
      b[i].hi[e] = static_cast<int8_t>(q >> 8); // arithmetic: q = 256 * hi + lo
    }
    for (int l = 0; l < 8; ++l) {
      int32_t sq = 0, sh = 0;
      for (int e = 4 * l; e < 4 * l + 4; ++e) {
        sq += x[i].qs[e];
        sh += b[i].hi[e];
      }
      b[i].pe[2 * l] = x[i].qs[4 * l];
      b[i].pe[2 * l + 1] = x[i].qs[4 * l + 1];
      b[i].po[2 * l] = x[i].qs[4 * l + 2];
      b[i].po[2 * l + 1] = x[i].qs[4 * l + 3];
      b[i].m8[l] = -8 * sq;
      b[i].m32[l] = -32 * sq;
      b[i].mh[l] = -32768 * sh;
    }
    d[i] = x[i].d;
    s[i] = x[i].s;
  }
  for (uint32_t i = nb; i % 8 != 0; ++i) d[i] = s[i] = 0.0f;
}

void lanes_act(const block_q16_act* x, uint32_t nb, block_q16_lanes* b, float* d, float* s) noexcept {
  for (uint32_t g = 0; g < nb / 8; ++g) {
    for (uint32_t j = 0; j < 8; ++j) {
      const int16_t* q = x[8 * g + j].qs;
      for (uint32_t e = 0; e < 32; ++e) {
        b[g].lo[e / 4][4 * j + e % 4] = static_cast<uint8_t>(q[e] & 0xff);
        b[g].hi[e / 4][4 * j + e % 4] = static_cast<int8_t>(q[e] >> 8); // arithmetic: q = 256 * hi + lo
      }
      for (uint32_t h = 0; h < 2; ++h) {
        int32_t sum = 0;
        for (uint32_t e = 16 * h; e < 16 * h + 16; ++e) sum += q[e];
        b[g].m32[h][j] = -32 * sum;
      }
      int32_t high = 0;
      for (uint32_t e = 0; e < 32; ++e) high += q[e] >> 8;
      b[g].mh[j] = -32768 * high;
    }
  }
  for (uint32_t i = 0; i < nb; ++i) {
    d[i] = x[i].d;
    s[i] = x[i].s;
  }
}

void tiles_act(const block_q16_act* x, uint32_t n_tokens, uint32_t nb, block_q16_tile* out) noexcept {
  const uint32_t n_tiles = (n_tokens + tile_tokens - 1) / tile_tokens;
  for (uint32_t u = 0; u < n_tiles; ++u) {
    for (uint32_t i = 0; i < nb; ++i) {
      block_q16_tile& b = out[static_cast<size_t>(u) * nb + i];
      for (uint32_t n = 0; n < tile_tokens; ++n) {
        const uint32_t t = u * tile_tokens + n;
        const block_q16_act* q = t < n_tokens ? x + static_cast<size_t>(t) * nb + i : nullptr;
        uint8_t lo[32], hi[32];
        for (uint32_t e = 0; e < 32; ++e) {
          const int v = q != nullptr ? q->qs[e] : 0;
          lo[e] = static_cast<uint8_t>(v & 0xff);
          hi[e] = static_cast<uint8_t>(v >> 8); // arithmetic: q = 256 * hi + lo
        }
        for (uint32_t k = 0; k < 8; ++k) { // elements 4k..4k+3 of token n: bytes 4n.. of row k
          std::memcpy(&b.lo[k][4 * n], lo + 4 * k, 4);
          std::memcpy(&b.hi[k][4 * n], hi + 4 * k, 4);
        }
        b.d[n] = q != nullptr ? q->d : 0.0f;
        b.s[n] = q != nullptr ? q->s : 0.0f;
      }
    }
  }
}

const kernel_table& scalar_kernels() noexcept { return table; }

const kernel_table& active_kernels() noexcept {
  switch (active_isa()) {
    case cpu_isa::amx:
      if (const auto* k = amx_kernels()) return *k;
      [[fallthrough]];
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
