// Mixture-of-experts routing: for each token, a softmax over its router
// logits, the top-k experts (ties go to the lower id) and their weights (the
// selected probabilities, renormalised to sum 1 when asked, times a scale).
// CPU reference of the CUDA op and the CPU engine's router; pure function.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct moe_route_args {
  const float* logits = nullptr; ///< [n_tokens, n_expert]; token t at logits + t * logits_stride
  size_t logits_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n_expert = 0;
  uint32_t k = 0;                ///< experts per token; REQUIRES: 1 <= k <= n_expert
  bool normalize = false;        ///< weights /= sum of the k selected probabilities
  float scale = 1.0f;            ///< weights *= scale (after normalising)
  uint32_t* expert = nullptr;    ///< [n_tokens, k] out: expert ids, most probable first
  float* weight = nullptr;       ///< [n_tokens, k] out
};

void moe_route(const moe_route_args& args);

} // namespace dynamo::kernels::ref
