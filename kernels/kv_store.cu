#include "kernels/kv_store.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

// One block per token; threads copy the token's n_kv_head * head_dim K and V
// values, head h's row to its own [block_size][head_dim] plane of the block.
__global__ void kv_store_kernel(kv_store_args a) {
  const uint32_t t = blockIdx.x;
  const uint32_t slot = a.slots[t];
  if (slot == no_slot) return;
  const uint32_t block = slot / a.kv.block_size, in_block = slot % a.kv.block_size;
  const uint32_t D = a.kv.head_dim, row = a.kv.n_kv_head * D;
  const __nv_bfloat16* k = a.k + t * a.k_stride;
  const __nv_bfloat16* v = a.v + t * a.v_stride;
  for (uint32_t i = threadIdx.x; i < row; i += blockDim.x) {
    const uint32_t h = i / D, d = i % D;
    const size_t dst = kv_offset(a.kv, block, in_block, h) + d;
    a.kv.k[dst] = k[i];
    a.kv.v[dst] = v[i];
  }
}

} // namespace

cudaError_t launch_kv_store(const kv_store_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0) return cudaSuccess;
  const size_t row = static_cast<size_t>(a.kv.n_kv_head) * a.kv.head_dim;
  if (a.k == nullptr || a.v == nullptr || a.slots == nullptr || a.kv.k == nullptr || a.kv.v == nullptr ||
      a.kv.block_size == 0 || row == 0 || a.k_stride < row || a.v_stride < row) {
    return cudaErrorInvalidValue;
  }
  kv_store_kernel<<<a.n_tokens, 128, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
