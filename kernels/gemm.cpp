// Host-only (cuBLAS calls, no device code): compiled by the C++ compiler.
#include "kernels/gemm.cuh"

namespace dynamo::kernels::gpu {

cudaError_t to_cuda_error(cublasStatus_t s) noexcept {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return cudaSuccess;
    case CUBLAS_STATUS_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUBLAS_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
    case CUBLAS_STATUS_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUBLAS_STATUS_ARCH_MISMATCH: return cudaErrorInvalidDeviceFunction;
    case CUBLAS_STATUS_NOT_SUPPORTED: return cudaErrorNotSupported;
    case CUBLAS_STATUS_EXECUTION_FAILED: return cudaErrorLaunchFailure;
    default: return cudaErrorUnknown;
  }
}

cudaError_t launch_gemm(const gemm_args& a, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return cudaSuccess;
  if (a.handle == nullptr || a.x == nullptr || a.w == nullptr || a.y == nullptr || a.k == 0 || a.x_stride < a.k ||
      a.w_stride < a.k || a.y_stride < a.n) {
    return cudaErrorInvalidValue;
  }
  if (auto s = cublasSetStream(a.handle, stream); s != CUBLAS_STATUS_SUCCESS) return to_cuda_error(s);
  // cuBLAS is column-major: the row-major [n, k] weight is a column-major
  // k x n matrix, so C (n x m, column-major == y row-major) = op_T(W) . X.
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t y_type = a.y_type == gemm_out::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasStatus_t s =
      cublasGemmEx(a.handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(a.n), static_cast<int>(a.m),
                   static_cast<int>(a.k), &alpha, a.w, CUDA_R_16BF, static_cast<int>(a.w_stride), a.x, CUDA_R_16BF,
                   static_cast<int>(a.x_stride), &beta, a.y, y_type, static_cast<int>(a.y_stride),
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return to_cuda_error(s);
}

} // namespace dynamo::kernels::gpu
