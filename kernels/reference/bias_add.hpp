// Bias add of a linear layer's output: y[t, i] += bias[i] (Qwen2's Q/K/V
// biases, optional attention-output biases). CPU reference of
// kernels/bias_add.cu and the CPU engine op; pure function over caller buffers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct bias_add_args {
  float* y = nullptr;          ///< [n_tokens, n]; token t at y + t * y_stride; updated in place
  size_t y_stride = 0;
  const float* bias = nullptr; ///< [n]
  uint32_t n_tokens = 0;
  uint32_t n = 0;
};

void bias_add(const bias_add_args& args);

} // namespace dynamo::kernels::ref
