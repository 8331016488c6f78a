// Internal to kernels/reference: the instruction-set-specific inner loops
// (integer block dots of every quant type, float dots of F32/F16/BF16 rows,
// fp16 KV helpers, activation quantization) behind one table per path,
// picked by cpu_features at call time. The public ops (matmul,
// paged_attention) call through active_kernels(). Pure functions.
#pragma once

#include "kernels/reference/tensor_type.hpp"

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref::detail {

/// An activation block quantized for integer dots: 32 int16 values
/// q = nearbyint(x * 32767 / amax) with scale `d = amax / 32767` and
/// `s = d * sum(qs)` (the latter folds in the weight blocks' offsets). 16
/// bits, not 8: blocks that hold one massive activation (attention-sink
/// tokens) keep their small entries.
struct block_q16_act {
  float d;
  float s;
  int16_t qs[32];
};
static_assert(sizeof(block_q16_act) == 72);

/// The same int16 activation values, split into bytes for the byte-lane
/// kernels (Q4_0, Q4_K, Q6_K, IQ4_XS): q = 256 * hi + lo, so that
/// 4- and 6-bit weights are multiplied as bytes (VPDPBUSD / VPMADDUBSW)
/// without widening them to int16. Per lane l, with S_l the sum of q and H_l
/// the sum of hi over elements 4l..4l+3, the terms that cancel the weights'
/// offsets: m8 = -8 S (Q4_0), m32 = -32 S (Q6_K), mh = -32768 H (IQ4_XS).
/// pe / po: the int16 values again, elements (4m, 4m+1) / (4m+2, 4m+3) at
/// m = 0..7, for the kernels that widen the weights to int16 once and share
/// them among several tokens (one VPMADDWD pair per token gives lane m).
struct alignas(32) block_q16_split {
  uint8_t lo[32];
  int8_t hi[32];
  int32_t m8[8];
  int32_t m32[8];
  int32_t mh[8];
  int16_t pe[16];
  int16_t po[16];
};
static_assert(sizeof(block_q16_split) == 224);

/// One token's split activations: nb blocks, their scales d and offset
/// terms s (as in block_q16_act), d and s padded with zeros to a multiple of 8.
struct act_split {
  const block_q16_split* b;
  const float* d;
  const float* s;
};

/// Splits nb int16 activation blocks (exact integer work, the same on every path).
void split_act(const block_q16_act* x, uint32_t nb, block_q16_split* b, float* d, float* s) noexcept;

/// One 256-value super-block of int16 activations for the lane kernels
/// (kernels/reference/repack.hpp): "vector" v, lane j (bytes 4j..4j+3) holds
/// elements 4v..4v+3 of 32-value block j, split into bytes as in
/// block_q16_split. m32[h][j] = -32 * (sum of block j's elements
/// 16h..16h+15), the offset term of Q6_K (and, summed, of Q4_0); mh[j] =
/// -32768 * (sum of block j's high bytes), IQ4_NL's (as in block_q16_split).
struct alignas(32) block_q16_lanes {
  uint8_t lo[8][32];
  int8_t hi[8][32];
  int32_t m32[2][8];
  int32_t mh[8];
};
static_assert(sizeof(block_q16_lanes) == 608);

/// One token's lane activations: nb / 8 super-blocks, and the nb blocks'
/// scales d and offset terms s (as in block_q16_act); q: the nb int16 blocks
/// themselves (a lane row's tail blocks, nb % 8 of them, are dotted with those).
struct act_lanes {
  const block_q16_lanes* b;
  const float* d;
  const float* s;
  const block_q16_act* q;
};

/// Rearranges the first nb / 8 * 8 of nb int16 activation blocks into lanes,
/// d and s of all nb (exact integer work, the same on every path).
void lanes_act(const block_q16_act* x, uint32_t nb, block_q16_lanes* b, float* d, float* s) noexcept;

/// Most tokens one weight row is dotted with per call (the weight block is
/// unpacked once and reused).
inline constexpr uint32_t max_dot_tokens = 4;

/// For rows r < n_rows of a quantized weight matrix (row r at w + r *
/// row_bytes, nb 32-value blocks each) and tokens t < nt <= 4 (activation
/// blocks x[t][0..nb)):   y[t * y_stride + r] = dot(row r, x[t]).
///
/// Every quant type reads as, per 32-value block i: 32 integer weights q
/// (|q| <= 4096), a scale dw and, for types with an offset, a coefficient mw,
/// with value = dw * q + mw (Q5_0: dw = d, mw = -16 d; Q5_K sub-block j: dw =
/// d * sc_j, mw = -(dmin * m_j); see simd_scalar.cpp for each type; these
/// are Q4_1, Q5_0, Q5_1, Q8_0, Q5_K and IQ4_NL, the others are dot_s_fn).
/// Per block, eight exact int32 lane sums (lane l: elements 2l, 2l+1, 16+2l,
/// 17+2l) are converted to float and fused-multiply-added with dw * d_x into
/// accumulator lanes (even blocks in one accumulator, odd in another); mw * s_x goes to one offset sum per
/// parity; then the lanes are summed in a fixed tree. For a fixed (row,
/// token) none of it depends on nt or n_rows (batch-invariant), and every
/// path gives the same bits.
using dot_q_fn = void (*)(const void* w, size_t row_bytes, uint32_t n_rows, const block_q16_act* const* x,
                          uint32_t nt, uint32_t nb, float* y, size_t y_stride);

/// The byte-lane types (Q4_0, Q4_K, Q6_K, IQ4_XS), same contract
/// against split activations. Per 32-value block i: eight exact int32 lane
/// sums L_l = sum of w_e * x_e over elements e = 4l..4l+3, with w_e the
/// block's integer weight (Q4_0: q - 8; Q4_K: q; Q6_K: sc * (q - 32) with
/// the element's 16-value scale; IQ4_XS: the table level), converted to float and
/// fused-multiply-added with c_i = dw_i * d_x into the accumulator of block
/// parity i % 2. Q4_K's offsets: off[i % 8] = fma(mw_i, s_x, off[i % 8]).
/// Result: tree sum of acc[0] + acc[1], plus tree sum of off; batch-invariant
/// and the same bits on every path, as above.
using dot_s_fn = void (*)(const void* w, size_t row_bytes, uint32_t n_rows, const act_split* x, uint32_t nt,
                          uint32_t nb, float* y, size_t y_stride);

/// The same for F32/F16/BF16 rows of k elements against fp32 activation rows
/// x[t][0..k): per 16 elements, two 8-lane accumulators take fused
/// multiply-adds of the widened weights; the lanes are summed in the same
/// tree; the last k % 16 elements are fused-multiply-added in order.
using dot_f_fn = void (*)(const void* w, size_t row_bytes, uint32_t n_rows, const float* const* x, uint32_t nt,
                          uint32_t k, float* y, size_t y_stride);

/// The lane-layout types (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0, IQ4_XS, Q4_K,
/// Q5_K, Q6_K in kernels/reference/repack.hpp), same contract against lane
/// activations. Per group g (the 32-value block types: 8 blocks; the others a
/// super-block) and block j: the exact int32 dot S_j of its 32 integer
/// weights with block 8g+j of x (Q4_0: q - 8; Q5_0: q - 16; IQ4_NL, IQ4_XS:
/// the table level; Q4_1, Q5_1, Q8_0, Q4_K, Q5_K: q; Q6_K: two sums, elements
/// 0..15 and 16..31, of q - 32), converted to float; with c_j = dw_j * d_x
/// (the 32-value block types: dw_j = d_j; IQ4_XS: d * (ls_j - 32); Q4_K,
/// Q5_K: d * sc_j; Q6_K: d * sc of each half), acc[j] = fma(c_j, S_j, acc[j])
/// per sum, and for the types with an offset mw_j (Q4_1, Q5_1: m_j; Q4_K,
/// Q5_K: dmin * -m_j) then acc[j] = fma(mw_j, s_x, acc[j]). The 32-value block
/// types' tail (nb % 8 blocks in the row layout after the nb / 8 groups) is
/// one more group whose blocks j >= nb % 8 have c_j = S_j = mw_j = s_x = 0
/// (both fmas run on all 8 lanes), S_j taken against x.q. Result: the tree
/// sum of acc (as hsum); batch-invariant, the same bits on every path. The
/// bits differ from the row kernels' (other summation order), not the accuracy.
using dot_l_fn = void (*)(const void* w, size_t row_bytes, uint32_t n_rows, const act_lanes* x, uint32_t nt,
                          uint32_t nb, float* y, size_t y_stride);

/// One 16-token tile of int16 activations for one 32-value block, laid out
/// as AMX B tiles (kernels/reference/simd_x86_amx.inc): hi / lo row k, bytes
/// 4n..4n+3 hold elements 4k..4k+3 of token n split into bytes as in
/// block_q16_split (q = 256 * hi + lo); d, s: the tokens' block scales and
/// offset terms (Q6_K's -32 offset is in its signed tile weights instead).
/// Tokens past the call's count are zeros.
struct alignas(64) block_q16_tile {
  int8_t hi[8][64];
  uint8_t lo[8][64];
  float d[16];
  float s[16];
};
static_assert(sizeof(block_q16_tile) == 1152);

/// All tokens of a call in tiles: tile u's block i at b[u * nb + i].
struct act_tiles {
  const block_q16_tile* b;
  uint32_t n_tokens;
};

/// Tokens per AMX tile.
inline constexpr uint32_t tile_tokens = 16;

/// Rearranges the int16 blocks of n_tokens tokens (x[t * nb + i]) into
/// ceil(n_tokens / 16) * nb tiles (exact integer work, the same on every path).
void tiles_act(const block_q16_act* x, uint32_t n_tokens, uint32_t nb, block_q16_tile* out) noexcept;

/// The K-quant lane rows (Q4_K, Q5_K, Q6_K) against every token of a call
/// on the AMX path: rows r < n_rows <= 16, y[t * y_stride + r] for t <
/// x.n_tokens. The same bits as dot_l_fn (each sub-block's int32 sum comes
/// from a tile product, then the float steps of dot_l_fn in its order).
using dot_t_fn = void (*)(const void* w, size_t row_bytes, uint32_t n_rows, const act_tiles& x, uint32_t nb,
                          float* y, size_t y_stride);

struct kernel_table {
  dot_q_fn dot_q4_1, dot_q5_0, dot_q5_1, dot_q8_0, dot_q5_k, dot_iq4_nl;
  dot_s_fn dot_q4_0, dot_q4_k, dot_q6_k, dot_iq4_xs;
  dot_l_fn dot_q4_0_lanes, dot_iq4_nl_lanes, dot_q8_0_lanes, dot_iq4_xs_lanes, dot_q4_k_lanes, dot_q5_k_lanes, dot_q6_k_lanes;
  dot_l_fn dot_q4_1_lanes, dot_q5_0_lanes, dot_q5_1_lanes;
  dot_f_fn dot_f32, dot_f16, dot_bf16;
  /// Quantizes nb*32 floats into nb activation blocks.
  void (*quantize_act)(const float* x, block_q16_act* y, uint32_t nb);
  /// sum a[i]*b[i], i < n.
  float (*dot)(const float* a, const float* b, uint32_t n);
  /// y[i] += a * x[i].
  void (*axpy_f32)(float a, const float* x, float* y, uint32_t n);
  /// out[t][j] = dot(q[t], k + j * k_stride, n) * scale for t < n_q, j <
  /// n_rows: each the bits of `dot` (several rows and queries in flight, each
  /// row loaded once for all queries, the same arithmetic per pair).
  void (*dot_rows)(const float* const* q, uint32_t n_q, const float* k, size_t k_stride, uint32_t n_rows, uint32_t n,
                   float scale, float* const* out);
  /// For each t < n_q: axpy_f32(p[t][j], v + j * v_stride, y[t], n) for j =
  /// 0, 1, .. n_rows - 1 in that order: the bits of those calls (y kept in
  /// registers across rows, each row loaded once for all outputs).
  void (*axpy_rows)(const float* const* p, uint32_t n_q, const float* v, size_t v_stride, uint32_t n_rows,
                    float* const* y, uint32_t n);
  /// x[i] = e^(x[i] - m) by exp_lanes.hpp: the same bits on every path.
  void (*exp_row)(float* x, uint32_t n, float m);
  /// o[i] = g[i] / (1 + e^-g[i]) * u[i] by exp_lanes.hpp: the same bits on every path.
  void (*swiglu_row)(const float* g, const float* u, float* o, uint32_t n);
  /// y[i] = fp16(x[i]), round to nearest even.
  void (*store_f16)(const float* x, uint16_t* y, uint32_t n);
  /// dot_rows / axpy_rows over fp16 rows (an fp16 KV cache read in place): the
  /// bits of converting the rows to fp32 (exact), then dot_rows / axpy_rows.
  void (*dot_rows_f16)(const float* const* q, uint32_t n_q, const uint16_t* k, size_t k_stride, uint32_t n_rows,
                       uint32_t n, float scale, float* const* out);
  void (*axpy_rows_f16)(const float* const* p, uint32_t n_q, const uint16_t* v, size_t v_stride, uint32_t n_rows,
                        float* const* y, uint32_t n);
  /// AMX tile kernels of the K-quant lane rows; null on the other paths.
  dot_t_fn dot_q4_k_tiles = nullptr, dot_q5_k_tiles = nullptr, dot_q6_k_tiles = nullptr;
  /// tiles_act, vectorized (the same bytes); null where the plain one serves.
  void (*tiles_act)(const block_q16_act* x, uint32_t n_tokens, uint32_t nb, block_q16_tile* out) noexcept = nullptr;
};

/// The integer dot of a quant type: one of the two kinds, or neither for
/// F32/F16/BF16 and unknown ids.
struct integer_dots {
  dot_q_fn q16 = nullptr;   ///< against block_q16_act
  dot_s_fn split = nullptr; ///< against act_split
  [[nodiscard]] explicit operator bool() const noexcept { return q16 != nullptr || split != nullptr; }
};

[[nodiscard]] inline integer_dots integer_dot(const kernel_table& kt, tensor_type t) noexcept {
  switch (t) {
    case tensor_type::q4_0: return {nullptr, kt.dot_q4_0};
    case tensor_type::q4_1: return {kt.dot_q4_1, nullptr};
    case tensor_type::q5_0: return {kt.dot_q5_0, nullptr};
    case tensor_type::q5_1: return {kt.dot_q5_1, nullptr};
    case tensor_type::q8_0: return {kt.dot_q8_0, nullptr};
    case tensor_type::q4_k: return {nullptr, kt.dot_q4_k};
    case tensor_type::q5_k: return {kt.dot_q5_k, nullptr};
    case tensor_type::q6_k: return {nullptr, kt.dot_q6_k};
    case tensor_type::iq4_nl: return {kt.dot_iq4_nl, nullptr};
    case tensor_type::iq4_xs: return {nullptr, kt.dot_iq4_xs};
    case tensor_type::f32:
    case tensor_type::f16:
    case tensor_type::bf16: return {};
  }
  return {};
}

/// The lane-layout dot of a type; null for types without one.
[[nodiscard]] inline dot_l_fn lanes_dot(const kernel_table& kt, tensor_type t) noexcept {
  switch (t) {
    case tensor_type::q4_0: return kt.dot_q4_0_lanes;
    case tensor_type::q4_1: return kt.dot_q4_1_lanes;
    case tensor_type::q5_0: return kt.dot_q5_0_lanes;
    case tensor_type::q5_1: return kt.dot_q5_1_lanes;
    case tensor_type::iq4_nl: return kt.dot_iq4_nl_lanes;
    case tensor_type::q8_0: return kt.dot_q8_0_lanes;
    case tensor_type::iq4_xs: return kt.dot_iq4_xs_lanes;
    case tensor_type::q4_k: return kt.dot_q4_k_lanes;
    case tensor_type::q5_k: return kt.dot_q5_k_lanes;
    case tensor_type::q6_k: return kt.dot_q6_k_lanes;
    default: return nullptr;
  }
}

/// The AMX tile dot of a type; null for types and paths without one.
[[nodiscard]] inline dot_t_fn tiles_dot(const kernel_table& kt, tensor_type t) noexcept {
  switch (t) {
    case tensor_type::q4_k: return kt.dot_q4_k_tiles;
    case tensor_type::q5_k: return kt.dot_q5_k_tiles;
    case tensor_type::q6_k: return kt.dot_q6_k_tiles;
    default: return nullptr;
  }
}

/// The float dot of F32/F16/BF16; null for the quant types.
[[nodiscard]] inline dot_f_fn float_dot(const kernel_table& kt, tensor_type t) noexcept {
  switch (t) {
    case tensor_type::f32: return kt.dot_f32;
    case tensor_type::f16: return kt.dot_f16;
    case tensor_type::bf16: return kt.dot_bf16;
    default: return nullptr;
  }
}

[[nodiscard]] const kernel_table& scalar_kernels() noexcept;
/// Null when the library was built for a non-x86 target.
[[nodiscard]] const kernel_table* avx2_kernels() noexcept;
[[nodiscard]] const kernel_table* avx2_vnni_kernels() noexcept;
/// The VNNI table plus the AMX tile kernels; null without x86.
[[nodiscard]] const kernel_table* amx_kernels() noexcept;

/// The table for cpu_features' active_isa().
[[nodiscard]] const kernel_table& active_kernels() noexcept;

} // namespace dynamo::kernels::ref::detail
