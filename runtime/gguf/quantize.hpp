// fp32 -> GGUF encodings for the types the writer emits (F32, F16, BF16,
// Q8_0, Q4_0, Q4_1), following ggml's reference quantizers so files we write
// load anywhere. Used by gguf::writer and tests. Pure; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/tensor_type.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::gguf {

void quantize_q4_0(const float* x, block_q4_0* y, size_t n_blocks) noexcept;
void quantize_q4_1(const float* x, block_q4_1* y, size_t n_blocks) noexcept;
void quantize_q8_0(const float* x, block_q8_0* y, size_t n_blocks) noexcept;

/// True for the types `quantize` can produce.
[[nodiscard]] bool can_quantize(tensor_type type) noexcept;

/// Encodes `x` as `type`. x.size() must be a multiple of the block size
/// (errc::invalid_argument); other types give errc::unsupported.
[[nodiscard]] expected<std::vector<std::byte>> quantize(tensor_type type, std::span<const float> x);

} // namespace dynamo::gguf
