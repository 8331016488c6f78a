// SwiGLU activation of the Llama MLP: out = silu(gate) * up, silu(g) = g / (1 + e^-g).
// CPU reference and CPU engine op; pure function over caller buffers. e^-g is
// its own vectorized expf (within ~1 ulp): the same bits on every target and
// at every position of a row.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct swiglu_args {
  const float* gate = nullptr; ///< [n_tokens, n]; token t at gate + t * in_stride
  const float* up = nullptr;   ///< [n_tokens, n]; token t at up + t * in_stride
  size_t in_stride = 0;        ///< e.g. 2n when gate and up come from one fused matmul
  float* out = nullptr;        ///< [n_tokens, n]; token t at out + t * out_stride
  size_t out_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n = 0;
};

void swiglu(const swiglu_args& args);

} // namespace dynamo::kernels::ref
