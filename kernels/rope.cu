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

// With per-head norms: one block per (token, head). The head is staged in
// shared memory as fp32, RMS-normalised there, then rotated from it and
// written back, so the only bf16 rounding is the final one.
__global__ void rope_norm_kernel(rope_args a) {
  extern __shared__ float v[]; // [head_dim]
  __shared__ float scratch[32];
  const uint32_t t = blockIdx.x, h = blockIdx.y;
  const float* w = h < a.n_q_heads ? a.q_norm : a.k_norm; // the same for the whole block
  __nv_bfloat16* x = a.x + t * a.x_stride + static_cast<size_t>(h) * a.head_dim;
  float sq = 0.0f;
  for (uint32_t i = threadIdx.x; i < a.head_dim; i += blockDim.x) {
    const float f = __bfloat162float(x[i]);
    v[i] = f;
    sq += f * f;
  }
  if (w != nullptr) {
    const float total = detail::block_sum(sq, scratch);
    const float scale = rsqrtf(total / static_cast<float>(a.head_dim) + a.norm_eps);
    for (uint32_t i = threadIdx.x; i < a.head_dim; i += blockDim.x) v[i] = v[i] * scale * w[i];
  }
  __syncthreads();
  const uint32_t pos = a.positions[t];
  const bool rotate = pos < a.max_positions; // else: normalised but unrotated (a bug upstream)
  const uint32_t half = a.rot_dim / 2;
  const uint32_t gap = a.style == rope_style::norm ? 1 : half;
  const uint32_t step = a.style == rope_style::norm ? 2 : 1;
  // The pairs cover dims [0, rot_dim) in both styles; the rest is copied.
  for (uint32_t i = threadIdx.x; i < half; i += blockDim.x) {
    const uint32_t i0 = i * step, i1 = i0 + gap;
    const float x0 = v[i0], x1 = v[i1];
    if (rotate) {
      const float c = a.cos[static_cast<size_t>(pos) * half + i], s = a.sin[static_cast<size_t>(pos) * half + i];
      x[i0] = __float2bfloat16_rn(x0 * c - x1 * s);
      x[i1] = __float2bfloat16_rn(x0 * s + x1 * c);
    } else {
      x[i0] = __float2bfloat16_rn(x0);
      x[i1] = __float2bfloat16_rn(x1);
    }
  }
  for (uint32_t i = a.rot_dim + threadIdx.x; i < a.head_dim; i += blockDim.x) x[i] = __float2bfloat16_rn(v[i]);
}

} // namespace

cudaError_t launch_rope(const rope_args& a, cudaStream_t stream) {
  const bool norm = a.q_norm != nullptr || a.k_norm != nullptr;
  if (a.n_tokens == 0 || a.n_heads == 0 || (a.rot_dim == 0 && !norm)) return cudaSuccess;
  if (a.x == nullptr || a.positions == nullptr || a.cos == nullptr || a.sin == nullptr || a.rot_dim % 2 != 0 ||
      a.rot_dim > a.head_dim || a.x_stride < static_cast<size_t>(a.n_heads) * a.head_dim) {
    return cudaErrorInvalidValue;
  }
  if (!norm) {
    rope_kernel<<<a.n_tokens, 128, 0, stream>>>(a);
    return last_launch_error();
  }
  if (a.head_dim > max_rope_norm_head_dim || a.n_heads > 65535 || a.n_q_heads > a.n_heads || !(a.norm_eps >= 0.0f)) {
    return cudaErrorInvalidValue;
  }
  rope_norm_kernel<<<dim3(a.n_tokens, a.n_heads), 128, a.head_dim * sizeof(float), stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
