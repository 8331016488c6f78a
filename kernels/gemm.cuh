// Dense GEMM through cuBLAS: y[m, n] = x[m, k] . w[n, k]^T with bf16 inputs,
// fp32 accumulation (CUBLAS_COMPUTE_32F, tensor cores) and a bf16 or fp32
// output. `w` is row-major [n, k] -- the GGUF / nn.Linear layout, so a fused
// QKV or gate|up weight is just its parts' rows stacked. Capturable in a CUDA
// graph once the handle has a workspace (cublasSetWorkspace). The handle is
// bound to `stream` by the launcher. CPU reference: kernels/reference/matmul.hpp.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

enum class gemm_out : uint8_t { bf16 = 0, f32 = 1 };

struct gemm_args {
  cublasHandle_t handle = nullptr;
  const __nv_bfloat16* x = nullptr; ///< [m, k] row-major; row i at x + i * x_stride
  size_t x_stride = 0;
  const __nv_bfloat16* w = nullptr; ///< [n, k] row-major; row j at w + j * w_stride
  size_t w_stride = 0;
  void* y = nullptr;                ///< [m, n] row-major of y_type; row i at y + i * y_stride elements
  size_t y_stride = 0;
  gemm_out y_type = gemm_out::bf16;
  uint32_t m = 0;
  uint32_t n = 0;
  uint32_t k = 0;
};

/// cuBLAS failures map to the nearest cudaError_t (invalid value, allocation,
/// not supported, launch failure; cudaErrorUnknown otherwise).
[[nodiscard]] cudaError_t launch_gemm(const gemm_args& args, cudaStream_t stream);

/// The cudaError_t that launch_gemm reports for a cuBLAS status.
[[nodiscard]] cudaError_t to_cuda_error(cublasStatus_t status) noexcept;

} // namespace dynamo::kernels::gpu
