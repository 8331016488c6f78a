// The grammar mask of structured outputs on the GPU: logits of tokens whose
// bit is clear in the row's uploaded bitmask become -inf (ids past the mask's
// words too), in place, before the logit edits and sampling. The mask is
// computed on the CPU (runtime/grammar matcher). CPU reference:
// kernels/reference/token_bitmask.hpp. Stream-ordered.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct token_bitmask_args {
  float* logits = nullptr;        ///< [*, n_vocab] fp32, edited in place
  size_t logits_stride = 0;
  uint32_t n_vocab = 0;
  const uint64_t* mask = nullptr; ///< [n_rows, mask_words] device
  const uint32_t* rows = nullptr; ///< [n_rows] device: the logits row of mask row r
  uint32_t mask_words = 0;
  uint32_t n_rows = 0;
};

[[nodiscard]] cudaError_t launch_token_bitmask(const token_bitmask_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
