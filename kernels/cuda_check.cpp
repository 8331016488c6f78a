#include "kernels/cuda_check.cuh"

namespace dynamo::kernels::gpu {

bool cuda_available() noexcept {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); // clear the sticky-free error so later calls start clean
    return false;
  }
  return n > 0;
}

} // namespace dynamo::kernels::gpu
