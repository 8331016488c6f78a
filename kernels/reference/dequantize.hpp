// Dequantization of weight rows of every supported storage type to fp32, and
// quantization of fp32 rows into the simple block types (Q4_0, Q4_1, Q8_0)
// for tests and synthetic models. Pure functions over caller buffers; any thread.
#pragma once

#include "kernels/reference/weight_types.hpp"

#include <cstdint>

namespace dynamo::kernels::ref {

/// Writes `k` floats for one row stored as `type` at `src`.
/// REQUIRES: k % block_elems(type) == 0; `src` holds row_bytes(type, k).
void dequantize_row(weight_type type, const void* src, float* dst, uint32_t k) noexcept;

/// Quantizes `k` floats into `dst` (row_bytes(type, k) bytes) the way ggml's
/// reference quantizers do. Supports f32, f16, bf16, q4_0, q4_1 and q8_0;
/// returns false for the k-quants.
[[nodiscard]] bool quantize_row(weight_type type, const float* src, void* dst, uint32_t k) noexcept;

} // namespace dynamo::kernels::ref
