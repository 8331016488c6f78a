// How one layer's K and V live in a paged KV cache, as the kv_store and
// paged_attention ops see it. A plain view; the cache (runtime/model/kv_cache)
// owns the memory. Within one block and layer, K (and V) is
//   [n_kv_head][block_size][head_dim]   contiguous, row-major
// (one KV head's positions are contiguous: attention streams them), and
// block b of the layer starts `block_stride` elements after block 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

enum class kv_dtype : uint8_t { f32 = 0, f16 = 1 };

[[nodiscard]] inline size_t kv_dtype_bytes(kv_dtype t) noexcept { return t == kv_dtype::f32 ? 4 : 2; }

struct paged_kv_view {
  void* k = nullptr;      ///< block 0, slot 0, head 0 of this layer's K
  void* v = nullptr;      ///< same for V
  kv_dtype dtype = kv_dtype::f32;
  size_t block_stride = 0; ///< elements from block b to block b+1
  uint32_t block_size = 16;
  uint32_t n_kv_head = 0;
  uint32_t head_dim = 0;

  /// Element offset of (block, slot in block, kv head) from k or v.
  [[nodiscard]] size_t offset(uint32_t block, uint32_t slot, uint32_t head) const noexcept {
    return block * block_stride + (static_cast<size_t>(head) * block_size + slot) * head_dim;
  }
};

} // namespace dynamo::kernels::ref
