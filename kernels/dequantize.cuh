// Dequantization of GGUF weight rows on the GPU into bf16 (or fp16), used to
// upload weights: the raw GGUF blocks are copied to the device once and
// expanded there. Types: every computed type of kernels/reference/tensor_type.hpp
// (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
// IQ4_XS). Math is fp32 as in the CPU reference (kernels/reference/dequantize.hpp),
// then rounded once.
#pragma once

#include "kernels/embedding.cuh" // half_type
#include "kernels/reference/tensor_type.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct dequantize_args {
  ref::tensor_type type = ref::tensor_type::f32;
  const void* src = nullptr;  ///< [n_rows] rows of ref::row_bytes(type, k) bytes, device
  uint32_t n_rows = 0;
  uint32_t k = 0;             ///< elements per row; REQUIRES: a whole number of blocks
  void* dst = nullptr;        ///< [n_rows, k] of dst_type; row r at dst + r * dst_stride elements
  size_t dst_stride = 0;
  half_type dst_type = half_type::bf16;
};

[[nodiscard]] cudaError_t launch_dequantize(const dequantize_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
