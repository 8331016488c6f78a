#include "kernels/swiglu.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

// 2-D grid: x covers the row in chunks of blockDim.x, y strides over the
// tokens (MoE steps have more rows than a grid's 65535 y-blocks).
__global__ void swiglu_kernel(swiglu_args a) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.n) return;
  for (uint32_t t = blockIdx.y; t < a.n_tokens; t += gridDim.y) {
    const float g = __bfloat162float(a.gate[t * a.in_stride + i]);
    const float u = __bfloat162float(a.up[t * a.in_stride + i]);
    a.out[t * a.out_stride + i] = __float2bfloat16_rn(g / (1.0f + expf(-g)) * u);
  }
}

} // namespace

cudaError_t launch_swiglu(const swiglu_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0 || a.n == 0) return cudaSuccess;
  if (a.gate == nullptr || a.up == nullptr || a.out == nullptr || a.out_stride < a.n) return cudaErrorInvalidValue;
  constexpr unsigned threads = 256;
  const unsigned rows = a.n_tokens < 65535u ? a.n_tokens : 65535u;
  swiglu_kernel<<<dim3(detail::div_up(a.n, threads), rows), threads, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
