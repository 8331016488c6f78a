// How one layer's K and V live in the GPU paged KV cache, as the kv_store and
// paged_attention kernels address it: the same layout as the CPU cache
// (kernels/reference/paged_kv.hpp) in bf16. Within one block and layer, K (and V) is
//   [n_kv_head][block_size][head_dim]   contiguous, row-major (one head's keys are contiguous),
// and block b of the layer starts `block_stride` elements after block 0.
// A plain view; runtime/model/cuda owns the memory.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct paged_kv {
  __nv_bfloat16* k = nullptr; ///< block 0, slot 0, head 0 of this layer's K (device)
  __nv_bfloat16* v = nullptr; ///< same for V
  size_t block_stride = 0;    ///< elements from block b to block b+1
  uint32_t block_size = 16;
  uint32_t n_kv_head = 0;
  uint32_t head_dim = 0;
};

/// Element offset of (block, slot in block, kv head) from k or v: the CPU view's
/// `paged_kv_view::offset`, so a block moves between CPU and GPU caches unchanged.
__host__ __device__ inline size_t kv_offset(const paged_kv& kv, uint32_t block, uint32_t slot, uint32_t head) {
  return block * kv.block_stride + (static_cast<size_t>(head) * kv.block_size + slot) * kv.head_dim;
}

/// Slot value meaning "do not store" (padding rows of a captured graph).
inline constexpr uint32_t no_slot = 0xffffffffu;

} // namespace dynamo::kernels::gpu
