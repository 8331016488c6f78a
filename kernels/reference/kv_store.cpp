#include "kernels/reference/kv_store.hpp"

#include "kernels/reference/simd_kernels.hpp"

#include <cstring>

namespace dynamo::kernels::ref {

void kv_store(const kv_store_args& a) {
  const auto& kt = detail::active_kernels();
  const uint32_t hd = a.kv.head_dim;
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    const uint32_t block = a.slots[t] / a.kv.block_size;
    const uint32_t slot = a.slots[t] % a.kv.block_size;
    for (uint32_t h = 0; h < a.kv.n_kv_head; ++h) {
      const size_t off = a.kv.offset(block, slot, h);
      const float* k = a.k + t * a.k_stride + size_t(h) * hd;
      const float* v = a.v + t * a.v_stride + size_t(h) * hd;
      if (a.kv.dtype == kv_dtype::f32) {
        std::memcpy(static_cast<float*>(a.kv.k) + off, k, hd * sizeof(float));
        std::memcpy(static_cast<float*>(a.kv.v) + off, v, hd * sizeof(float));
      } else {
        kt.store_f16(k, static_cast<uint16_t*>(a.kv.k) + off, hd);
        kt.store_f16(v, static_cast<uint16_t*>(a.kv.v) + off, hd);
      }
    }
  }
}

} // namespace dynamo::kernels::ref
