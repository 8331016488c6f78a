// RMSNorm, optionally fused with the residual add that precedes it:
//   x += residual (if given);  out = x / sqrt(mean(x^2) + eps) * weight.
// CPU reference and CPU engine op; pure function over caller buffers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct rms_norm_args {
  float* x = nullptr;              ///< [n_tokens, n]; updated in place when `residual` is set
  size_t x_stride = 0;
  const float* residual = nullptr; ///< optional [n_tokens, n], added into x first
  size_t residual_stride = 0;
  const float* weight = nullptr;   ///< [n]
  float* out = nullptr;            ///< [n_tokens, n]; may alias x
  size_t out_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n = 0;
  float eps = 1e-5f;
};

void rms_norm(const rms_norm_args& args);

} // namespace dynamo::kernels::ref
