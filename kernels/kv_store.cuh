// Writes the K and V rows of new tokens into their paged-cache slots on the
// GPU (vLLM's reshape_and_cache). CPU reference: kernels/reference/kv_store.hpp.
// Distinct tokens must map to distinct slots; slot == no_slot skips a token.
#pragma once

#include "kernels/paged_kv.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct kv_store_args {
  const __nv_bfloat16* k = nullptr; ///< [n_tokens, n_kv_head, head_dim]; token t at k + t * k_stride
  size_t k_stride = 0;
  const __nv_bfloat16* v = nullptr; ///< [n_tokens, n_kv_head, head_dim]; token t at v + t * v_stride
  size_t v_stride = 0;
  const uint32_t* slots = nullptr;  ///< [n_tokens] device: block_id * block_size + slot in block, or no_slot
  uint32_t n_tokens = 0;
  paged_kv kv;
};

[[nodiscard]] cudaError_t launch_kv_store(const kv_store_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
