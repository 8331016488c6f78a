// SwiGLU of the Llama MLP on the GPU: out = silu(gate) * up, silu(g) = g / (1 + e^-g),
// reading gate and up from the fused gate|up GEMM output ([n_tokens, 2n]:
// gate in columns [0, n), up in [n, 2n); in_stride = 2n). Math in fp32.
// CPU reference: kernels/reference/swiglu.hpp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct swiglu_args {
  const __nv_bfloat16* gate = nullptr; ///< [n_tokens, n]; token t at gate + t * in_stride
  const __nv_bfloat16* up = nullptr;   ///< [n_tokens, n]; token t at up + t * in_stride
  size_t in_stride = 0;
  __nv_bfloat16* out = nullptr;        ///< [n_tokens, n]; token t at out + t * out_stride
  size_t out_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n = 0;
};

[[nodiscard]] cudaError_t launch_swiglu(const swiglu_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
