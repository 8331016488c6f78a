// Embedding lookup on the GPU: gathers rows of a half-precision token table
// (fp16 or bf16, as uploaded from GGUF) into the fp32 residual stream.
// CPU reference: kernels/reference/embedding.hpp. Launch on any stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

/// Element type of a half-precision device tensor.
enum class half_type : uint8_t { bf16 = 0, f16 = 1 };

struct embedding_args {
  const void* table = nullptr;     ///< [n_vocab, n_embd] half_type, row-major, device
  half_type dtype = half_type::bf16;
  uint32_t n_vocab = 0;
  uint32_t n_embd = 0;
  const uint32_t* ids = nullptr;   ///< [n_tokens] device; an id >= n_vocab yields a zero row
  uint32_t n_tokens = 0;
  float* out = nullptr;            ///< [n_tokens, n_embd] fp32; token t at out + t * out_stride
  size_t out_stride = 0;
};

[[nodiscard]] cudaError_t launch_embedding(const embedding_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
