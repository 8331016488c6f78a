#include "kernels/nonfinite.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

__global__ void count_nonfinite_kernel(const void* data, size_t n, bool bf16, uint32_t* count) {
  uint32_t local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]) : static_cast<const float*>(data)[i];
    local += isfinite(v) ? 0u : 1u;
  }
  if (local != 0) atomicAdd(count, local);
}

} // namespace

cudaError_t launch_count_nonfinite(const void* data, size_t n, bool bf16, uint32_t* count, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (data == nullptr || count == nullptr) return cudaErrorInvalidValue;
  count_nonfinite_kernel<<<256, 256, 0, stream>>>(data, n, bf16, count);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
