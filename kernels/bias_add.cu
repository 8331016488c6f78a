#include "kernels/bias_add.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

// One block per token; threads stride over the row.
__global__ void bias_add_kernel(bias_add_args a) {
  __nv_bfloat16* row = a.y + blockIdx.x * a.y_stride;
  for (uint32_t i = threadIdx.x; i < a.n; i += blockDim.x) {
    row[i] = __float2bfloat16_rn(__bfloat162float(row[i]) + a.bias[i]);
  }
}

} // namespace

cudaError_t launch_bias_add(const bias_add_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0 || a.n == 0) return cudaSuccess;
  if (a.y == nullptr || a.bias == nullptr || a.y_stride < a.n) return cudaErrorInvalidValue;
  bias_add_kernel<<<a.n_tokens, 256, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
