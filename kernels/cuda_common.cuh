// Device helpers shared by the kernels in this directory: bf16/fp16 loads as
// fp32, warp and block reductions. Included only by .cu files (device code);
// the public .cuh headers never include it.
#pragma once

#if !defined(__CUDACC__)
#error "kernels/cuda_common.cuh is for .cu files only"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dynamo::kernels::gpu::detail {

constexpr unsigned full_mask = 0xffffffffu;

__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(float v) { return v; }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(full_mask, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(full_mask, v, o));
  return v;
}

/// Sum over the block; every thread gets the result. `scratch` holds >= 32
/// floats of shared memory. REQUIRES: blockDim.x a multiple of 32, all threads call.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads(); // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < n_warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}

/// Max over the block; every thread gets the result. Same rules as block_sum.
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < n_warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

/// Blocks of `threads` needed to cover `n` items, at least 1.
__host__ __device__ constexpr unsigned div_up(uint64_t n, unsigned threads) {
  return n == 0 ? 1u : static_cast<unsigned>((n + threads - 1) / threads);
}

} // namespace dynamo::kernels::gpu::detail
