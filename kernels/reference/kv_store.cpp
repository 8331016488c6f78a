#include "kernels/reference/kv_store.hpp"

#include "kernels/reference/simd_kernels.hpp"

#include <cstring>

namespace dynamo::kernels::ref {

void kv_store(const kv_store_args& a) {
  const auto& kt = detail::active_kernels();
  const uint32_t row = a.kv.n_kv_head * a.kv.head_dim; // one token's K: all heads, contiguous
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    const uint32_t block = a.slots[t] / a.kv.block_size;
    const size_t off = a.kv.offset(block, a.slots[t] % a.kv.block_size, 0);
    const float* k = a.k + t * a.k_stride;
    const float* v = a.v + t * a.v_stride;
    if (a.kv.dtype == kv_dtype::f32) {
      std::memcpy(static_cast<float*>(a.kv.k) + off, k, row * sizeof(float));
      std::memcpy(static_cast<float*>(a.kv.v) + off, v, row * sizeof(float));
    } else {
      kt.store_f16(k, static_cast<uint16_t*>(a.kv.k) + off, row);
      kt.store_f16(v, static_cast<uint16_t*>(a.kv.v) + off, row);
    }
  }
}

} // namespace dynamo::kernels::ref
