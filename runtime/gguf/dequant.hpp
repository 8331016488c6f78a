// Dequantization of GGUF tensor rows to fp32, exactly as ggml defines each
// format (engine.md 1.4). The CPU engine and the CUDA kernels' references call
// these. Pure functions on caller-owned buffers; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/tensor_type.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace dynamo::gguf {

// Per-format kernels: `n_blocks` consecutive blocks -> n_blocks * block_elems floats.
void dequantize_q4_0(const block_q4_0* x, float* y, size_t n_blocks) noexcept;
void dequantize_q4_1(const block_q4_1* x, float* y, size_t n_blocks) noexcept;
void dequantize_q8_0(const block_q8_0* x, float* y, size_t n_blocks) noexcept;
void dequantize_q4_k(const block_q4_k* x, float* y, size_t n_blocks) noexcept;
void dequantize_q6_k(const block_q6_k* x, float* y, size_t n_blocks) noexcept;

/// Dequantizes `dst.size()` elements of type `type` stored in `src` (raw file
/// bytes, any alignment). Errors: unsupported type (errc::unsupported), or
/// dst.size() not a whole number of blocks / src too short (errc::invalid_argument).
[[nodiscard]] expected<void> dequantize_row(tensor_type type, std::span<const std::byte> src,
                                            std::span<float> dst);

} // namespace dynamo::gguf
