// ggml tensor types as GGUF stores them: ids, block geometry (elements and
// bytes per block) and the packed block layouts of the quant formats the
// engine computes with. Used by the GGUF reader/writer, the dequantizers and
// the CPU/CUDA matmul kernels. Constants only; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dynamo::gguf {

/// ggml_type ids (GGUF `ggml_type` field). Only the named ones are computed
/// with; the enum may hold any other id read from a file: valid ggml ids are
/// still sized (see `geometry_of`) so a file holding them parses and only
/// their use fails.
enum class tensor_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q8_0 = 8,
  q4_k = 12,
  q6_k = 14,
  bf16 = 30,
};

/// Elements and bytes of one block of a ggml type ("elements" run along ne[0]).
struct type_geometry {
  uint32_t block_elems = 0;
  uint32_t block_bytes = 0;
  std::string_view name; ///< ggml spelling, e.g. "Q4_K"
};

/// Geometry of ggml type `id`, or nullopt for ids no ggml version defines
/// (4, 5, 31-33, beyond the table).
[[nodiscard]] std::optional<type_geometry> geometry_of(tensor_type id) noexcept;

/// True for the types `dequantize_row` implements (the enum above).
[[nodiscard]] bool can_dequantize(tensor_type id) noexcept;

/// ggml spelling of `id` ("Q4_1"), or "type<id>" for an unknown id.
[[nodiscard]] std::string type_name(tensor_type id);

/// Bytes of one row of `n` elements, or nullopt when the id is unknown or
/// `n` is not a multiple of the block size.
[[nodiscard]] std::optional<uint64_t> row_bytes(tensor_type id, uint64_t n) noexcept;

inline constexpr uint32_t qk4_0 = 32; ///< elements per Q4_0 / Q4_1 / Q8_0 block
inline constexpr uint32_t qk_k = 256; ///< elements per K-quant super-block

// Block layouts, byte-compatible with ggml (`ggml-common.h`). fp16 fields are
// raw uint16_t bits; decode with fp16_to_fp32.

/// Q4_0: y = d * (q - 8). Low nibbles of qs[j] are element j, high nibbles j+16.
struct block_q4_0 {
  uint16_t d;
  uint8_t qs[qk4_0 / 2];
};

/// Q4_1: y = d * q + m, nibble order as Q4_0.
struct block_q4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[qk4_0 / 2];
};

/// Q8_0: y = d * q, q signed.
struct block_q8_0 {
  uint16_t d;
  int8_t qs[qk4_0];
};

/// Q4_K: 8 sub-blocks of 32, 6-bit scales/mins packed in `scales` (see dequant.cpp).
struct block_q4_k {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[qk_k / 2];
};

/// Q6_K: 16 sub-blocks of 16; 4 low bits in ql, 2 high bits in qh, d last.
struct block_q6_k {
  uint8_t ql[qk_k / 2];
  uint8_t qh[qk_k / 4];
  int8_t scales[qk_k / 16];
  uint16_t d;
};

static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q4_k) == 144);
static_assert(sizeof(block_q6_k) == 210);
static_assert(alignof(block_q4_0) == 2 && alignof(block_q6_k) == 2);

} // namespace dynamo::gguf
