#include "kernels/rope.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

// One block per token; threads stride over (head, pair) so each pair is
// rotated by exactly one thread.
__global__ void rope_kernel(rope_args a) {
  const uint32_t t = blockIdx.x;
  const uint32_t pos = a.positions[t];
  if (pos >= a.max_positions) return;
  const uint32_t half = a.rot_dim / 2;
  const uint32_t gap = a.style == rope_style::norm ? 1 : half;  // distance between the pair's members
  const uint32_t step = a.style == rope_style::norm ? 2 : 1;    // distance between pair i and i+1
  const float* c = a.cos + static_cast<size_t>(pos) * half;
  const float* s = a.sin + static_cast<size_t>(pos) * half;
  __nv_bfloat16* row = a.x + t * a.x_stride;
  const uint32_t n_pairs = a.n_heads * half;
  for (uint32_t p = threadIdx.x; p < n_pairs; p += blockDim.x) {
    const uint32_t h = p / half, i = p % half;
    __nv_bfloat16* v = row + static_cast<size_t>(h) * a.head_dim + i * step;
    const float x0 = __bfloat162float(v[0]), x1 = __bfloat162float(v[gap]);
    v[0] = __float2bfloat16_rn(x0 * c[i] - x1 * s[i]);
    v[gap] = __float2bfloat16_rn(x0 * s[i] + x1 * c[i]);
  }
}

} // namespace

cudaError_t launch_rope(const rope_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0 || a.n_heads == 0 || a.rot_dim == 0) return cudaSuccess;
  if (a.x == nullptr || a.positions == nullptr || a.cos == nullptr || a.sin == nullptr || a.rot_dim % 2 != 0 ||
      a.rot_dim > a.head_dim || a.x_stride < static_cast<size_t>(a.n_heads) * a.head_dim) {
    return cudaErrorInvalidValue;
  }
  rope_kernel<<<a.n_tokens, 128, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
