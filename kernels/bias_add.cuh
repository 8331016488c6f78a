// Bias add on the GPU: y[t, i] = bf16(y[t, i] + bias[i]) on a bf16 GEMM
// output (Qwen2's fused Q|K|V bias, an attention-output bias), fp32 bias and
// fp32 math. CPU reference: kernels/reference/bias_add.hpp. Any stream.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct bias_add_args {
  __nv_bfloat16* y = nullptr;  ///< [n_tokens, n] bf16; token t at y + t * y_stride; updated in place
  size_t y_stride = 0;
  const float* bias = nullptr; ///< [n] fp32 device
  uint32_t n_tokens = 0;
  uint32_t n = 0;
};

[[nodiscard]] cudaError_t launch_bias_add(const bias_add_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
