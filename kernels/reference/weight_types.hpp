// The weight storage types the CPU kernels understand (GGUF/ggml type ids and
// block layouts), half/bfloat16 conversions and row sizes. Shared by the model
// loader, the matmul and the embedding kernels; pure functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace dynamo::kernels::ref {

/// Storage type of a weight tensor; values are the ggml type ids of GGUF.
enum class weight_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q8_0 = 8,
  q4_k = 12,
  q6_k = 14,
  bf16 = 30,
};

/// Short name ("q4_1"), or "unknown".
[[nodiscard]] std::string_view to_string(weight_type t) noexcept;

/// True for the types above; false for any other ggml id.
[[nodiscard]] bool is_supported(uint32_t ggml_type_id) noexcept;

/// Elements per quantization block (1 for float types, 32 or 256 otherwise).
[[nodiscard]] uint32_t block_elems(weight_type t) noexcept;

/// Bytes per quantization block.
[[nodiscard]] uint32_t block_bytes(weight_type t) noexcept;

/// Bytes of one row of `k` elements. REQUIRES: k % block_elems(t) == 0.
[[nodiscard]] inline size_t row_bytes(weight_type t, uint32_t k) noexcept {
  return static_cast<size_t>(k / block_elems(t)) * block_bytes(t);
}

// Block layouts, byte-exact with ggml-common.h. `d`, `m`, `dmin` are fp16 bits.
struct block_q4_0 { uint16_t d; uint8_t qs[16]; };
struct block_q4_1 { uint16_t d; uint16_t m; uint8_t qs[16]; };
struct block_q8_0 { uint16_t d; int8_t qs[32]; };
struct block_q4_k { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qs[128]; };
struct block_q6_k { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q4_k) == 144);
static_assert(sizeof(block_q6_k) == 210);

/// A 2-D weight as GGUF stores it: `n` rows (ne1) of `k` elements (ne0), each
/// row contiguous, row_bytes(type, k) bytes apart. A non-owning view (usually
/// into the mmap of a GGUF file).
struct weight_matrix {
  weight_type type = weight_type::f32;
  uint32_t k = 0;             ///< elements per row (ne0)
  uint32_t n = 0;             ///< rows (ne1): output features of a matmul
  const void* data = nullptr; ///< n * row_bytes(type, k) bytes

  [[nodiscard]] const void* row(uint32_t r) const noexcept {
    return static_cast<const std::byte*>(data) + r * row_bytes(type, k);
  }
};

/// IEEE half bits -> float (exact, handles subnormals, inf and NaN).
[[nodiscard]] float fp16_to_fp32(uint16_t h) noexcept;

/// float -> IEEE half bits, round to nearest even.
[[nodiscard]] uint16_t fp32_to_fp16(float f) noexcept;

/// bfloat16 bits -> float (exact).
[[nodiscard]] inline float bf16_to_fp32(uint16_t h) noexcept {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

} // namespace dynamo::kernels::ref
