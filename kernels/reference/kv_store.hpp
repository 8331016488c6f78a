// Writes the K and V rows of new tokens into their paged-cache slots (vLLM's
// reshape_and_cache), converting to the cache's dtype. CPU reference and CPU
// engine op; distinct tokens must map to distinct slots.
#pragma once

#include "kernels/reference/paged_kv.hpp"

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct kv_store_args {
  const float* k = nullptr;  ///< [n_tokens, n_kv_head, head_dim]; token t at k + t * k_stride
  size_t k_stride = 0;
  const float* v = nullptr;  ///< [n_tokens, n_kv_head, head_dim]; token t at v + t * v_stride
  size_t v_stride = 0;
  const uint32_t* slots = nullptr; ///< [n_tokens]: block_id * block_size + slot in block
  uint32_t n_tokens = 0;
  paged_kv_view kv;
};

void kv_store(const kv_store_args& args);

} // namespace dynamo::kernels::ref
