// Logits processing on the GPU before sampling: each item applies one
// kernels::logit_edit (logit_bias, the min_tokens mask, repetition /
// frequency / presence penalties) to one token of one logits row, in place,
// with kernels::apply_logit_edit, the formula the CPU sampler
// (runtime/model/sampler, its reference) runs. Items of a row name distinct
// tokens, so threads never touch the same logit. Stream-ordered.
#pragma once

#include "kernels/logit_edit.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

/// One edit of one row, packed on the host.
struct logit_edit_item {
  uint32_t row = 0;           ///< logits row
  uint32_t pad = 0;
  kernels::logit_edit edit;
  kernels::logit_penalties penalties;
};

struct logits_process_args {
  float* logits = nullptr;              ///< [n_rows, n_vocab] fp32, edited in place
  size_t logits_stride = 0;
  uint32_t n_vocab = 0;                 ///< edits of tokens >= n_vocab are ignored
  const logit_edit_item* items = nullptr; ///< [n_items] device
  uint32_t n_items = 0;
};

[[nodiscard]] cudaError_t launch_logits_process(const logits_process_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
