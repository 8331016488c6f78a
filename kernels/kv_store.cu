#include "kernels/kv_store.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

// One block per token; threads copy the token's n_kv_head * head_dim K and V values.
__global__ void kv_store_kernel(kv_store_args a) {
  const uint32_t t = blockIdx.x;
  const uint32_t slot = a.slots[t];
  if (slot == no_slot) return;
  const uint32_t block = slot / a.kv.block_size, in_block = slot % a.kv.block_size;
  const uint32_t row = a.kv.n_kv_head * a.kv.head_dim;
  const size_t dst = block * a.kv.block_stride + static_cast<size_t>(in_block) * row;
  const __nv_bfloat16* k = a.k + t * a.k_stride;
  const __nv_bfloat16* v = a.v + t * a.v_stride;
  for (uint32_t i = threadIdx.x; i < row; i += blockDim.x) {
    a.kv.k[dst + i] = k[i];
    a.kv.v[dst + i] = v[i];
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
