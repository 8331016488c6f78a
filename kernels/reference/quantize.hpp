// The one quantizer: fp32 rows to every computed storage type, following
// ggml's reference quantizers (ggml-quants.c quantize_row_*_ref, and the
// importance-free quantize_iq4_* for IQ4_NL/IQ4_XS), so the files we write
// load in llama.cpp with the quality its own quantizer gives without an
// importance matrix. The GGUF writer, dynamo-gguf-random, synthetic models
// and the tests call it. Pure function over caller buffers; any thread.
#pragma once

#include "kernels/reference/tensor_type.hpp"

#include <cstddef>

namespace dynamo::kernels::ref {

/// True for the types quantize_row() produces: every computed type.
[[nodiscard]] bool can_quantize(tensor_type type) noexcept;

/// Encodes the `n` floats at `src` as `type` into `dst` (row_bytes(type, n)
/// bytes, 2-byte aligned). Returns false, writing nothing, when the type
/// cannot be produced or `n` is not a whole number of its blocks.
[[nodiscard]] bool quantize_row(tensor_type type, const float* src, void* dst, size_t n) noexcept;

} // namespace dynamo::kernels::ref
