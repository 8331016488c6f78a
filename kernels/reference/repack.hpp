// The lane layouts: Q4_K, Q5_K, Q6_K and IQ4_XS super-blocks, and groups of 8
// consecutive Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL or Q8_0 blocks (a row's last k % 256
// values stay in the row layout), repacked at model load so that the matmul
// kernels hold eight 32-value blocks in the eight 32-bit lanes of a vector.
// Called by the model loader (one copy per matrix, quantized, never wider) and
// by the matmul. Pure functions; any thread.
#pragma once

#include "kernels/reference/tensor_type.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dynamo::kernels::ref {

/// Q4_K in lanes. Element e of sub-block j (32 values each) is the nibble
/// for "vector" v = e / 4 at byte 32 * (v / 2) + 4 * j + e % 4 of qs: the
/// low nibble for even v, the high one for odd v. So a 32-byte load of qs
/// gives two vectors whose lane j holds 4 elements of sub-block j. The
/// 6-bit scales and mins are unpacked to bytes.
struct block_q4_k_lanes {
  uint16_t d;
  uint16_t dmin;
  uint8_t sc[8];
  uint8_t m[8];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_q4_k_lanes) == 148);

/// Q5_K in lanes: Q4_K's lanes for the low 4 bits, then the fifth bits:
/// bit v of qh[4 * j + e % 4] is bit 4 of element e of sub-block j, v = e / 4
/// (so a shift and a mask of one 32-byte load give vector v's bit 4).
struct block_q5_k_lanes {
  block_q4_k_lanes low;
  uint8_t qh[qk_k / 8];
};
static_assert(sizeof(block_q5_k_lanes) == sizeof(block_q5_k) + 4);

/// Q6_K in lanes, with the same element order: the low 4 bits of vector v
/// are nibbles of ql as in Q4_K; its high 2 bits are bits 2 * (v % 4) and up
/// of byte 32 * (v / 4) + 4 * j + e % 4 of qh. sc[8 * h + j] is the scale of
/// elements 16h..16h+15 of sub-block j (vectors 4h..4h+3).
struct block_q6_k_lanes {
  uint8_t ql[qk_k / 2];
  uint8_t qh[qk_k / 4];
  int8_t sc[qk_k / 16];
  uint16_t d;
};
static_assert(sizeof(block_q6_k_lanes) == sizeof(block_q6_k));

/// Q4_0 in lanes: 8 consecutive blocks of a row (256 values, no super-block
/// in the file) as one group. d[j] is block j's fp16 scale; element e of
/// block j is the nibble at the same place of qs as in Q4_K (value q - 8).
struct block_q4_0_lanes {
  uint16_t d[8];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_q4_0_lanes) == 8 * sizeof(block_q4_0));

/// Q4_1 in lanes: the nibbles as in Q4_0 (value d[j] * q + m[j]).
struct block_q4_1_lanes {
  uint16_t d[8];
  uint16_t m[8];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_q4_1_lanes) == 8 * sizeof(block_q4_1));

/// Q5_0 in lanes: the low 4 bits as in Q4_0, the fifth bits as in Q5_K's
/// lanes (bit v of qh[4 * j + e % 4] is bit 4 of element e of block j, v = e / 4);
/// value d[j] * (q - 16).
struct block_q5_0_lanes : block_q4_0_lanes {
  uint8_t qh[qk_k / 8];
};
static_assert(sizeof(block_q5_0_lanes) == 8 * sizeof(block_q5_0));

/// Q5_1 in lanes: Q4_1's, plus the fifth bits as in Q5_0; value d[j] * q + m[j].
struct block_q5_1_lanes : block_q4_1_lanes {
  uint8_t qh[qk_k / 8];
};
static_assert(sizeof(block_q5_1_lanes) == 8 * sizeof(block_q5_1));

/// IQ4_NL in lanes: the same places as Q4_0; the nibbles index iq4nl_values.
struct block_iq4_nl_lanes : block_q4_0_lanes {};
static_assert(sizeof(block_iq4_nl_lanes) == 8 * sizeof(block_iq4_nl));

/// Q8_0 in lanes: 8 consecutive blocks of a row as one group, d[j] block
/// j's fp16 scale; element e of block j is qs[32 * (e / 4) + 4 * j + e % 4]
/// (vector e / 4, lane j, as the nibbles of the 4-bit layouts).
struct block_q8_0_lanes {
  uint16_t d[8];
  int8_t qs[qk_k];
};
static_assert(sizeof(block_q8_0_lanes) == 8 * sizeof(block_q8_0));

/// IQ4_XS in lanes: the nibbles as in IQ4_NL's groups (sub-block j's at
/// IQ4_NL's block j), the 6-bit scales unpacked to sc[j] = ls_j - 32.
struct block_iq4_xs_lanes {
  uint16_t d;
  int8_t sc[8];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_iq4_xs_lanes) == sizeof(block_iq4_xs) + 2);

/// True for the types that have a lane layout (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
/// Q8_0, IQ4_XS, Q4_K, Q5_K, Q6_K).
[[nodiscard]] bool has_lanes(tensor_type t) noexcept;

/// True when rows of k elements of type t get a lane copy: t has lanes and
/// k >= 256 (a whole number of blocks). A lane row is k / 256 groups, then
/// the last (k % 256) / 32 blocks as the file stores them (the "tail"; only
/// the 32-value block types have one).
[[nodiscard]] bool lanes_fit(tensor_type t, uint32_t k) noexcept;

/// Bytes per lane row of k elements (for the 32-value block types the same
/// as the file's rows); 0 without a lane layout.
[[nodiscard]] size_t lanes_row_bytes(tensor_type t, uint32_t k) noexcept;

/// The rows of `w` repacked: w.n * lanes_row_bytes bytes; empty unless
/// lanes_fit(w.type, w.k).
[[nodiscard]] std::vector<std::byte> repack_lanes(const weight_matrix& w);

/// Rows [r0, r1) of the same, written at out + r * lanes_row_bytes (callers
/// that split a matrix among threads).
void repack_lanes_rows(const weight_matrix& w, uint32_t r0, uint32_t r1, std::byte* out) noexcept;

/// Row r of a lane-layout copy back to floats (the layout's definition; tests).
void dequantize_lanes_row(tensor_type t, const void* row, float* y, uint32_t k) noexcept;

} // namespace dynamo::kernels::ref
