// The one home of ggml's tensor storage types: the ids GGUF stores, the block
// geometry and name of every ggml type (ids we do not compute with are still
// sized, so files holding them parse and only their use fails), the packed
// block layouts of the formats the kernels compute with, and weight_matrix,
// the kernels' view of a stored 2-D weight. Used by the GGUF reader/writer,
// the model loader, the CPU kernels and the CUDA dequantizer. Constants and
// pure functions; any thread. C++17: nvcc includes it.
#pragma once

#include "kernels/reference/half.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#if defined(__CUDACC__)
#define DYNAMO_HOST_DEVICE __host__ __device__
#else
#define DYNAMO_HOST_DEVICE
#endif

namespace dynamo::kernels::ref {

/// A ggml_type id. The named ones are the types the kernels compute with
/// (dequantize, matmul, embedding lookup); the enum may hold any other id read
/// from a file, which geometry_of() still sizes when ggml defines it.
enum class tensor_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  iq4_nl = 20,
  iq4_xs = 23,
  bf16 = 30,
};

/// Elements and bytes of one block of a ggml type (elements run along ne[0]).
struct type_geometry {
  uint32_t block_elems = 0;
  uint32_t block_bytes = 0;
  std::string_view name; ///< ggml's spelling, e.g. "Q4_K"
};

/// Geometry of any ggml type id, or nullopt for ids no ggml version defines
/// (4, 5, 31-33, ...) and for Q8_1, whose size changed between versions.
[[nodiscard]] std::optional<type_geometry> geometry_of(tensor_type t) noexcept;

/// ggml's spelling of `t` ("Q4_1"), or "type<id>" for an unknown id.
[[nodiscard]] std::string type_name(tensor_type t);

/// The type whose ggml name is `name`, any case ("q4_k", "Q4_K"); nullopt if none.
[[nodiscard]] std::optional<tensor_type> type_from_name(std::string_view name) noexcept;

/// True for the named enumerators: the types the kernels compute with.
[[nodiscard]] bool is_computed(tensor_type t) noexcept;

/// Bytes of a row of `n` elements; nullopt when the id is unknown or `n` is
/// not a whole number of blocks.
[[nodiscard]] std::optional<uint64_t> row_bytes(tensor_type t, uint64_t n) noexcept;

inline constexpr uint32_t qk32 = 32; ///< elements per Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/IQ4_NL block
inline constexpr uint32_t qk_k = 256; ///< elements per K-quant (and IQ4_XS) super-block

// Block layouts, byte-compatible with ggml-common.h. `d`, `m`, `dmin` are
// fp16 bits (fp16_to_fp32). Within a 32-value block of Q4_0/Q4_1/Q5_0/Q5_1/
// IQ4_NL/IQ4_XS, the low nibble of qs[j] is element j and the high one j+16.

/// Q4_0: y = d * (q - 8).
struct block_q4_0 {
  uint16_t d;
  uint8_t qs[qk32 / 2];
};
/// Q4_1: y = d * q + m.
struct block_q4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[qk32 / 2];
};
/// Q5_0: y = d * (q - 16); bit j of the little-endian uint32 qh is bit 4 of element j.
struct block_q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[qk32 / 2];
};
/// Q5_1: y = d * q + m, q as Q5_0.
struct block_q5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[qk32 / 2];
};
/// Q8_0: y = d * q, q signed.
struct block_q8_0 {
  uint16_t d;
  int8_t qs[qk32];
};
/// Q4_K: 8 sub-blocks of 32, y = d * sc_j * q - dmin * m_j with 6-bit sc/m
/// packed in `scales` (scale_min_k4). Sub-block 2c is the low nibbles of
/// qs[32c, 32c+32), sub-block 2c+1 their high nibbles.
struct block_q4_k {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[qk_k / 2];
};
/// Q5_K: Q4_K plus a fifth bit: bit j of qh[l] is bit 4 of element l of sub-block j.
struct block_q5_k {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[qk_k / 8];
  uint8_t qs[qk_k / 2];
};
/// Q6_K: 16 sub-blocks of 16, y = d * scales[s] * (q - 32); 4 low bits in ql,
/// 2 high bits in qh, d last (see dequantize.cpp for the element order).
struct block_q6_k {
  uint8_t ql[qk_k / 2];
  uint8_t qh[qk_k / 4];
  int8_t scales[qk_k / 16];
  uint16_t d;
};
/// IQ4_NL: y = d * iq4nl_values[q].
struct block_iq4_nl {
  uint16_t d;
  uint8_t qs[qk32 / 2];
};
/// IQ4_XS: 8 sub-blocks of 32, y = d * (ls_j - 32) * iq4nl_values[q] with a
/// 6-bit ls_j: low 4 bits in scales_l (nibble j%2 of byte j/2), high 2 bits
/// at bit 2j of scales_h.
struct block_iq4_xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[qk_k / 64];
  uint8_t qs[qk_k / 2];
};

/// The 16 non-linear levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl).
inline constexpr int8_t iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q4_k) == 144 && sizeof(block_q5_k) == 176 && sizeof(block_q6_k) == 210);
static_assert(sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136);
static_assert(alignof(block_q5_0) == 2 && alignof(block_q6_k) == 2 && alignof(block_iq4_xs) == 2);

/// The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K block
/// (host and device code: the CUDA dequantizer uses it too).
DYNAMO_HOST_DEVICE inline void scale_min_k4(uint32_t j, const uint8_t* s, uint8_t& sc, uint8_t& m) noexcept {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

/// A 2-D weight as GGUF stores it: `n` rows (ne1) of `k` elements (ne0), each
/// row contiguous and row_bytes(type, k) bytes after the previous one. A
/// non-owning view (usually into the mmap of a GGUF file).
struct weight_matrix {
  tensor_type type = tensor_type::f32;
  uint32_t k = 0;             ///< elements per row (ne0); a whole number of blocks
  uint32_t n = 0;             ///< rows (ne1): output features of a matmul
  const void* data = nullptr; ///< n * row_bytes(type, k) bytes
  /// Optional: the same rows repacked for the CPU matmul (kernels/reference/
  /// repack.hpp), lanes_stride bytes per row; null when there is none. Only
  /// the matmul reads it; everything else reads `data`.
  const void* lanes = nullptr;
  size_t lanes_stride = 0;

  /// Bytes per row. REQUIRES: is_computed(type) and k a whole number of blocks.
  [[nodiscard]] size_t stride() const noexcept { return static_cast<size_t>(row_bytes(type, k).value_or(0)); }
  [[nodiscard]] const void* row(uint32_t r) const noexcept {
    return static_cast<const std::byte*>(data) + r * stride();
  }
};

} // namespace dynamo::kernels::ref
