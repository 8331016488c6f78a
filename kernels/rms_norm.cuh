// RMSNorm fused with the residual add that precedes it, on the GPU:
//   x[r] += residual[r] (if given);  out[i] = bf16(x[r] / sqrt(mean(x[r]^2) + eps) * weight)
// with r = rows[i] (a gather, so the final norm runs on sampled rows only) or
// r = i. The residual stream x stays fp32; sub-block outputs and the norm's
// output are bf16 (GEMM inputs). CPU reference: kernels/reference/rms_norm.hpp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct rms_norm_args {
  float* x = nullptr;                      ///< [rows of x, n] fp32 residual stream; row r at x + r * x_stride
  size_t x_stride = 0;
  const __nv_bfloat16* residual = nullptr; ///< optional [rows of x, n] bf16, added into x first (x is updated)
  size_t residual_stride = 0;
  const float* weight = nullptr;           ///< [n] fp32
  __nv_bfloat16* out = nullptr;            ///< [n_rows, n] bf16; row i at out + i * out_stride
  size_t out_stride = 0;
  const uint32_t* rows = nullptr;          ///< optional [n_rows] device: source row of output row i
  uint32_t n_rows = 0;
  uint32_t n = 0;
  float eps = 1e-5f;
};

[[nodiscard]] cudaError_t launch_rms_norm(const rms_norm_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
