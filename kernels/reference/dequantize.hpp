// The one dequantizer: rows of every computed storage type to fp32, exactly as
// ggml defines each format (ggml-quants.c dequantize_row_*). The embedding op,
// the matmul's reference mode, the GGUF reader and the tests call it; the CUDA
// dequantizer is compared against it. Pure function over caller buffers; any thread.
#pragma once

#include "kernels/reference/tensor_type.hpp"

#include <cstddef>

namespace dynamo::kernels::ref {

/// Writes the `n` floats of one row stored as `type` at `src`.
/// REQUIRES: is_computed(type); n a whole number of blocks; `src` holds
/// row_bytes(type, n) bytes and is 2-byte aligned (GGUF data always is).
void dequantize_row(tensor_type type, const void* src, float* dst, size_t n) noexcept;

} // namespace dynamo::kernels::ref
