#include "kernels/reference/repack.hpp"

#include "kernels/reference/dequantize.hpp"

#include <cstddef>
#include <cstring>

namespace dynamo::kernels::ref {
namespace {

/// Byte and nibble of element e of sub-block j in a lane layout's nibble
/// array (qs of Q4_K, ql of Q6_K): see block_q4_k_lanes.
struct nibble_at {
  uint32_t byte, shift;
};
nibble_at lanes_nibble(uint32_t j, uint32_t e) {
  const uint32_t v = e / 4;
  return {32 * (v / 2) + 4 * j + e % 4, 4 * (v % 2)};
}

/// The same for Q6_K's two high bits in qh.
nibble_at lanes_high2(uint32_t j, uint32_t e) {
  const uint32_t v = e / 4;
  return {32 * (v / 4) + 4 * j + e % 4, 2 * (v % 4)};
}

uint32_t load4(const uint8_t* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

void store4(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

/// The 256 quants of a Q6_K super-block (0..63), element order; 4 at a time.
void q6_k_values(const block_q6_k& b, uint8_t* q) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; l += 4) {
        const uint32_t lo = load4(ql + l + 32 * (g % 2));
        const uint32_t low4 = (g < 2 ? lo : lo >> 4) & 0x0f0f0f0fu;
        store4(q + 128 * half + 32 * g + l, low4 | (((load4(qh + l) >> (2 * g)) & 0x03030303u) << 4));
      }
    }
  }
}

/// Q4_K, and the low 4 bits of Q5_K (the same scales and nibbles). Four
/// elements at a time (a uint32 of bytes; loading ~1 s of a 0.6B model was
/// these loops, byte by byte).
template <class Block>
void repack_k4(const Block& in, block_q4_k_lanes& out) {
  out.d = in.d;
  out.dmin = in.dmin;
  for (uint32_t j = 0; j < 8; ++j) {
    scale_min_k4(j, in.scales, out.sc[j], out.m[j]);
    // Element i of sub-block j: nibble j % 2 of in.qs[32 * (j / 2) + i].
    const uint8_t* q = in.qs + 32 * (j / 2);
    const uint32_t shift = 4 * (j % 2);
    for (uint32_t p = 0; p < 4; ++p) { // elements 8p..8p+3 (low nibbles) and 8p+4..8p+7 (high)
      store4(out.qs + 32 * p + 4 * j,
             ((load4(q + 8 * p) >> shift) & 0x0f0f0f0fu) | (((load4(q + 8 * p + 4) >> shift) & 0x0f0f0f0fu) << 4));
    }
  }
}

void repack_q4_k(const block_q4_k* in, block_q4_k_lanes& out) { repack_k4(*in, out); }

/// The 8x8 bit matrix of x's bytes transposed: bit c of byte r to bit r of byte c.
uint64_t transpose_bits8x8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00aa00aa00aa00aaull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000cccc0000ccccull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000f0f0f0f0ull;
  return x ^ t ^ (t << 28);
}

void repack_q5_k(const block_q5_k* in, block_q5_k_lanes& out) {
  repack_k4(*in, out.low);
  // Byte 4j + e of the lanes' qh: bit v is element 4v + e's, i.e. bit j of
  // in->qh[4v + e]: per e, an 8x8 bit transpose.
  for (uint32_t e = 0; e < 4; ++e) {
    uint64_t rows = 0;
    for (uint32_t v = 0; v < 8; ++v) rows |= static_cast<uint64_t>(in->qh[4 * v + e]) << (8 * v);
    const uint64_t cols = transpose_bits8x8(rows);
    for (uint32_t j = 0; j < 8; ++j) out.qh[4 * j + e] = static_cast<uint8_t>(cols >> (8 * j));
  }
}

/// The nibbles of 8 blocks of 32 (block j's 16 bytes at qs(j): element e
/// the low nibble of byte e, e < 16, else the high one of byte e - 16) into
/// the lane order of `out`, 4 elements at a time as in repack_k4: bytes
/// 32p + 4j.. of out take elements 8p..8p+3 (low nibbles) and 8p+4..8p+7
/// (high), which are nibble p / 2 of the block's bytes 8p % 16...
template <class Qs>
void repack_nibbles(Qs qs, uint8_t* out) {
  for (uint32_t j = 0; j < 8; ++j) {
    const uint8_t* q = qs(j);
    for (uint32_t p = 0; p < 4; ++p) {
      const uint32_t at = 8 * p % 16, shift = 4 * (p / 2);
      store4(out + 32 * p + 4 * j,
             ((load4(q + at) >> shift) & 0x0f0f0f0fu) | (((load4(q + at + 4) >> shift) & 0x0f0f0f0fu) << 4));
    }
  }
}

/// The fifth bits of 8 Q5_0/Q5_1 blocks (block j's little-endian 32-bit
/// qh(j): bit e for element e) into the lane places of Q5_K's qh.
template <class Qh>
void repack_fifth_bits(Qh qh, uint8_t* out) {
  for (uint32_t j = 0; j < 8; ++j) {
    const uint32_t h = load4(qh(j));
    for (uint32_t f = 0; f < 4; ++f) {
      uint32_t byte = 0;
      for (uint32_t v = 0; v < 8; ++v) byte |= ((h >> (4 * v + f)) & 1u) << v;
      out[4 * j + f] = static_cast<uint8_t>(byte);
    }
  }
}

/// Q4_0, Q4_1, Q5_0, Q5_1: 8 blocks' scales (and mins, fifth bits where the
/// type has them), then their nibbles. IQ4_NL is read as Q4_0: the same block
/// layout (fp16 d, then 16 nibble bytes), only the nibbles mean other values.
static_assert(sizeof(block_iq4_nl) == sizeof(block_q4_0) && offsetof(block_iq4_nl, qs) == offsetof(block_q4_0, qs));
template <class In, class Out>
void repack_32(const In* in, Out& out) {
  for (uint32_t j = 0; j < 8; ++j) {
    out.d[j] = in[j].d;
    if constexpr (requires { out.m; }) out.m[j] = in[j].m;
  }
  if constexpr (requires { out.qh; }) repack_fifth_bits([in](uint32_t j) { return in[j].qh; }, out.qh);
  repack_nibbles([in](uint32_t j) { return in[j].qs; }, out.qs);
}

void repack_q8_0(const block_q8_0* in, block_q8_0_lanes& out) {
  for (uint32_t j = 0; j < 8; ++j) {
    out.d[j] = in[j].d;
    for (uint32_t u = 0; u < 8; ++u) std::memcpy(out.qs + 32 * u + 4 * j, in[j].qs + 4 * u, 4); // elements 4u..4u+3
  }
}

void repack_iq4_xs(const block_iq4_xs* b, block_iq4_xs_lanes& out) {
  const block_iq4_xs& in = *b;
  out.d = in.d;
  for (uint32_t j = 0; j < 8; ++j) {
    const int ls = ((in.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((in.scales_h >> (2 * j)) & 3) << 4);
    out.sc[j] = static_cast<int8_t>(ls - 32);
  }
  repack_nibbles([&in](uint32_t j) { return in.qs + 16 * j; }, out.qs);
}

void repack_q6_k(const block_q6_k* b, block_q6_k_lanes& out) {
  const block_q6_k& in = *b;
  uint8_t q[qk_k];
  q6_k_values(in, q);
  for (uint32_t j = 0; j < 8; ++j) {
    out.sc[j] = in.scales[2 * j];
    out.sc[8 + j] = in.scales[2 * j + 1];
    const uint8_t* v = q + 32 * j; // vector u holds elements 4u..4u+3; 4 elements (e) at a time
    for (uint32_t p = 0; p < 4; ++p)
      store4(out.ql + 32 * p + 4 * j, (load4(v + 8 * p) & 0x0f0f0f0fu) | ((load4(v + 8 * p + 4) & 0x0f0f0f0fu) << 4));
    for (uint32_t h = 0; h < 2; ++h) {
      uint32_t bits = 0;
      for (uint32_t u = 0; u < 4; ++u) bits |= ((load4(v + 4 * (4 * h + u)) >> 4) & 0x03030303u) << (2 * u);
      store4(out.qh + 32 * h + 4 * j, bits);
    }
  }
  out.d = in.d;
}

/// One row of k values: k / 256 groups of PerGroup file blocks each into
/// lane blocks, then the tail blocks (PerGroup 8 only) copied as they are.
template <class In, class Out, uint32_t PerGroup, void (*Group)(const In*, Out&)>
void repack_row(const void* src, std::byte* dst, uint32_t k) {
  const auto* in = static_cast<const In*>(src);
  auto* out = reinterpret_cast<Out*>(dst);
  const uint32_t ng = k / qk_k;
  for (uint32_t g = 0; g < ng; ++g) Group(in + PerGroup * g, out[g]);
  if constexpr (PerGroup == 8) std::memcpy(out + ng, in + 8 * ng, (k % qk_k) / 32 * sizeof(In));
}

using row_repacker = void (*)(const void* src, std::byte* dst, uint32_t k);

row_repacker repacker(tensor_type t) {
  switch (t) {
    case tensor_type::q4_0:
    case tensor_type::iq4_nl: return repack_row<block_q4_0, block_q4_0_lanes, 8, repack_32<block_q4_0, block_q4_0_lanes>>;
    case tensor_type::q4_1: return repack_row<block_q4_1, block_q4_1_lanes, 8, repack_32<block_q4_1, block_q4_1_lanes>>;
    case tensor_type::q5_0: return repack_row<block_q5_0, block_q5_0_lanes, 8, repack_32<block_q5_0, block_q5_0_lanes>>;
    case tensor_type::q5_1: return repack_row<block_q5_1, block_q5_1_lanes, 8, repack_32<block_q5_1, block_q5_1_lanes>>;
    case tensor_type::q8_0: return repack_row<block_q8_0, block_q8_0_lanes, 8, repack_q8_0>;
    case tensor_type::iq4_xs: return repack_row<block_iq4_xs, block_iq4_xs_lanes, 1, repack_iq4_xs>;
    case tensor_type::q4_k: return repack_row<block_q4_k, block_q4_k_lanes, 1, repack_q4_k>;
    case tensor_type::q5_k: return repack_row<block_q5_k, block_q5_k_lanes, 1, repack_q5_k>;
    case tensor_type::q6_k: return repack_row<block_q6_k, block_q6_k_lanes, 1, repack_q6_k>;
    default: return nullptr;
  }
}

} // namespace

bool has_lanes(tensor_type t) noexcept { return repacker(t) != nullptr; }

bool lanes_fit(tensor_type t, uint32_t k) noexcept {
  const auto g = geometry_of(t);
  return has_lanes(t) && g && k >= qk_k && k % g->block_elems == 0;
}

size_t lanes_row_bytes(tensor_type t, uint32_t k) noexcept {
  const size_t ng = k / qk_k;
  switch (t) {
    case tensor_type::q4_0:
    case tensor_type::iq4_nl:
    case tensor_type::q4_1:
    case tensor_type::q5_0:
    case tensor_type::q5_1:
    case tensor_type::q8_0: return row_bytes(t, k).value_or(0); // groups of 8 blocks, the same bytes
    case tensor_type::iq4_xs: return ng * sizeof(block_iq4_xs_lanes);
    case tensor_type::q4_k: return ng * sizeof(block_q4_k_lanes);
    case tensor_type::q5_k: return ng * sizeof(block_q5_k_lanes);
    case tensor_type::q6_k: return ng * sizeof(block_q6_k_lanes);
    default: return 0;
  }
}

std::vector<std::byte> repack_lanes(const weight_matrix& w) {
  if (!lanes_fit(w.type, w.k)) return {};
  const size_t out_row = lanes_row_bytes(w.type, w.k);
  std::vector<std::byte> out(out_row * w.n);
  repack_lanes_rows(w, 0, w.n, out.data());
  return out;
}

void repack_lanes_rows(const weight_matrix& w, uint32_t r0, uint32_t r1, std::byte* out) noexcept {
  const row_repacker repack = repacker(w.type);
  if (repack == nullptr) return;
  const size_t out_row = lanes_row_bytes(w.type, w.k);
  for (uint32_t r = r0; r < r1; ++r) repack(w.row(r), out + out_row * r, w.k);
}

namespace {

/// The 4-bit quant (plus Q5's fifth bit) of element e of block j in a
/// Q4_0/Q4_1/Q5_0/Q5_1 group (qh null without fifth bits).
int lane_quant(const uint8_t* qs, const uint8_t* qh, uint32_t j, uint32_t e) {
  const nibble_at at = lanes_nibble(j, e);
  const int q = (qs[at.byte] >> at.shift) & 0x0f;
  return qh == nullptr ? q : q | (((qh[4 * j + e % 4] >> (e / 4)) & 1) << 4);
}

/// Element e of block (sub-block) j of lane group g of a row.
float lane_value(tensor_type t, const void* row, uint32_t g, uint32_t j, uint32_t e) {
  const nibble_at at = lanes_nibble(j, e);
  switch (t) {
    case tensor_type::q8_0: {
      const auto& b = static_cast<const block_q8_0_lanes*>(row)[g];
      return fp16_to_fp32(b.d[j]) * static_cast<float>(b.qs[32 * (e / 4) + 4 * j + e % 4]);
    }
    case tensor_type::q4_0:
    case tensor_type::iq4_nl: {
      const auto& b = static_cast<const block_q4_0_lanes*>(row)[g];
      const int q = lane_quant(b.qs, nullptr, j, e);
      return fp16_to_fp32(b.d[j]) * static_cast<float>(t == tensor_type::q4_0 ? q - 8 : iq4nl_values[q]);
    }
    case tensor_type::q4_1: {
      const auto& b = static_cast<const block_q4_1_lanes*>(row)[g];
      return fp16_to_fp32(b.d[j]) * static_cast<float>(lane_quant(b.qs, nullptr, j, e)) + fp16_to_fp32(b.m[j]);
    }
    case tensor_type::q5_0: {
      const auto& b = static_cast<const block_q5_0_lanes*>(row)[g];
      return fp16_to_fp32(b.d[j]) * static_cast<float>(lane_quant(b.qs, b.qh, j, e) - 16);
    }
    case tensor_type::q5_1: {
      const auto& b = static_cast<const block_q5_1_lanes*>(row)[g];
      return fp16_to_fp32(b.d[j]) * static_cast<float>(lane_quant(b.qs, b.qh, j, e)) + fp16_to_fp32(b.m[j]);
    }
    case tensor_type::iq4_xs: {
      const auto& b = static_cast<const block_iq4_xs_lanes*>(row)[g];
      const float dl = fp16_to_fp32(b.d) * static_cast<float>(b.sc[j]);
      return dl * static_cast<float>(iq4nl_values[(b.qs[at.byte] >> at.shift) & 0x0f]);
    }
    case tensor_type::q4_k:
    case tensor_type::q5_k: {
      const bool q5 = t == tensor_type::q5_k;
      const auto& b = q5 ? static_cast<const block_q5_k_lanes*>(row)[g].low : static_cast<const block_q4_k_lanes*>(row)[g];
      const float dj = fp16_to_fp32(b.d) * static_cast<float>(b.sc[j]);
      const float mj = fp16_to_fp32(b.dmin) * static_cast<float>(b.m[j]);
      const int q = lane_quant(b.qs, q5 ? static_cast<const block_q5_k_lanes*>(row)[g].qh : nullptr, j, e);
      return dj * static_cast<float>(q) - mj;
    }
    default: {
      const auto& b = static_cast<const block_q6_k_lanes*>(row)[g];
      const nibble_at hi = lanes_high2(j, e);
      const int q = (((b.ql[at.byte] >> at.shift) & 0x0f) | (((b.qh[hi.byte] >> hi.shift) & 3) << 4)) - 32;
      return fp16_to_fp32(b.d) * static_cast<float>(b.sc[8 * (e / 16) + j] * q);
    }
  }
}

} // namespace

void dequantize_lanes_row(tensor_type t, const void* row, float* y, uint32_t k) noexcept {
  const uint32_t ng = k / qk_k;
  for (uint32_t g = 0; g < ng; ++g) {
    for (uint32_t j = 0; j < 8; ++j) {
      for (uint32_t e = 0; e < 32; ++e) y[qk_k * g + 32 * j + e] = lane_value(t, row, g, j, e);
    }
  }
  if (k % qk_k != 0) { // the tail, in the row layout after the groups
    const size_t group_bytes = lanes_row_bytes(t, qk_k);
    dequantize_row(t, static_cast<const std::byte*>(row) + ng * group_bytes, y + qk_k * ng, k % qk_k);
  }
}

} // namespace dynamo::kernels::ref
