// Matmul of fp32 activations by GGUF weight matrices in their stored types:
// y[t, r] = sum_i x[t, i] * W[r, i]. The CPU engine's hot path; also the CPU
// reference for the CUDA GEMM/GEMV kernels. Runs on the caller's thread pool;
// the arguments' buffers must not be touched by others during the call.
//
// Every quant type (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
// IQ4_XS) takes the integer path: activations are quantized once per call to
// 32-value int16 blocks (one scale per block; the K-quants' 32- and 16-value
// sub-blocks line up with them), then each weight block is dotted with int16
// multiply-adds (AVX2 or VNNI when present, scalar otherwise; all three give
// the same bits). Q4_0, Q4_K, Q6_K and IQ4_XS see the int16 values
// split into two bytes and multiply them by the weight bytes (VPDPBUSD,
// VPMADDUBSW), with no widening of the weights. Matrices of the types with
// a lane layout that carry a repacked copy (weight_matrix::lanes,
// kernels/reference/repack.hpp) are read from it: 8 blocks (a super-block,
// or 8 consecutive blocks) in the 8 lanes of a vector (other bits than the
// row layout, same accuracy). On CPUs with AMX-INT8 (cpu_isa::amx), calls of
// 16+ tokens (Q6_K: 32+) read the Q4_K, Q5_K and Q6_K lane copies through tile
// products, with the lane kernels' bits. F32, F16 and BF16 rows are
// widened in registers and dotted
// with the fp32 activations (the same bits on every path too). No weight
// matrix is ever copied or widened in memory.
// int16, not int8: in a block that holds a massive activation (attention-sink
// tokens of Llama models reach 1000x the block's median and more) the other
// entries keep ~1.5% precision at 1000x, where int8 rounds them to zero or
// one step. On SmolLM2 int8 moved logits by up to 1.7 and changed greedy
// answers; int16 moves them by ~0.01.
// For a given token, results do not depend on the other tokens in the call.
#pragma once

#include "kernels/reference/thread_pool.hpp"
#include "kernels/reference/tensor_type.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::kernels::ref {

/// Scratch reused across calls (quantized activations); one per calling thread.
struct matmul_workspace {
  std::vector<std::byte> act;
  std::vector<std::byte> split; ///< the same activations split into bytes, when a weight needs them
  std::vector<std::byte> lanes; ///< the same in the lane layout, when a weight has lanes
  std::vector<std::byte> tiles; ///< the same in AMX tiles, on the AMX path for 16+ tokens
};

struct matmul_args {
  const float* x = nullptr;  ///< [n_tokens, k] fp32; token t at x + t * x_stride
  size_t x_stride = 0;       ///< floats between token rows, >= k
  uint32_t n_tokens = 0;
  /// Weights sharing the same k (e.g. Q, K and V): their outputs are laid
  /// side by side, weights[0] first; at most 8. Each needs k % block_elems(type) == 0.
  std::span<const weight_matrix> weights;
  float* y = nullptr;        ///< [n_tokens, sum of weights[j].n]; token t at y + t * y_stride
  size_t y_stride = 0;       ///< floats between token rows
  thread_pool* pool = nullptr;               ///< null: run on the caller only
  matmul_workspace* workspace = nullptr;     ///< null: allocate per call
  /// Reference mode: quant rows are dequantized one at a time and dotted with
  /// the fp32 activations (no int16 rounding of activations). Several times
  /// slower; for golden comparisons against float implementations.
  bool fp32_activations = false;
};

void matmul(const matmul_args& args);

} // namespace dynamo::kernels::ref
