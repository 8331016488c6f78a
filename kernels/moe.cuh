// Mixture-of-experts FFN ops on the GPU, graph-capturable: no host sync, and
// every data-dependent size (tokens per expert) is read from device memory.
// A layer runs route -> group -> matmul (gate|up) -> SwiGLU -> matmul (down)
// -> combine. CPU references: ref::moe_route, ref::moe_group, ref::moe_combine
// (kernels/reference/moe.hpp) and ref::matmul per expert. Any stream.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

/// The most experts (router rows) launch_moe_route takes.
inline constexpr uint32_t moe_max_experts = 4096;

/// Router: logits[t, e] = x[t] . router[e] (fp32 dot products of the bf16
/// normed hidden with the fp32 router), softmax, top-k (ties go to the lower
/// id), optional renormalisation of the k probabilities, times `scale`.
/// Optionally the shared expert's gate logit x[t] . shared_gate_w too.
struct moe_route_args {
  const __nv_bfloat16* x = nullptr; ///< [n_tokens, n_embd]; token t at x + t * x_stride
  size_t x_stride = 0;
  const float* router = nullptr;    ///< [n_expert, n_embd] fp32 row-major
  const float* shared_gate_w = nullptr; ///< optional [n_embd] fp32
  uint32_t n_tokens = 0;
  uint32_t n_embd = 0;
  uint32_t n_expert = 0;            ///< REQUIRES: <= moe_max_experts
  uint32_t k = 0;                   ///< experts per token; REQUIRES: 1 <= k <= n_expert
  bool normalize = false;           ///< weights /= sum of the k selected probabilities (clamped as the CPU)
  float scale = 1.0f;
  uint32_t* expert = nullptr;       ///< [n_tokens, k] out: expert ids, most probable first
  float* weight = nullptr;          ///< [n_tokens, k] out
  float* shared_gate = nullptr;     ///< [n_tokens] out: the shared gate's logit; REQUIRED iff shared_gate_w
  float* logits = nullptr;          ///< optional [n_tokens, n_expert] out: the router logits
};

[[nodiscard]] cudaError_t launch_moe_route(const moe_route_args& args, cudaStream_t stream);

/// Groups the pairs p = t * k + j by expert (a stable counting sort: tokens
/// stay in order within an expert), as ref::moe_group.
struct moe_group_args {
  const uint32_t* expert = nullptr; ///< [n_pairs]; REQUIRES: every id < n_expert
  uint32_t n_pairs = 0;
  uint32_t k = 0;                   ///< pairs per token
  uint32_t n_expert = 0;            ///< REQUIRES: <= moe_max_experts
  uint32_t* expert_start = nullptr; ///< [n_expert + 1] out: expert e owns sorted rows [start[e], start[e + 1])
  uint32_t* pair_token = nullptr;   ///< [n_pairs] out: token of sorted row r
  uint32_t* pair_row = nullptr;     ///< [n_pairs] out: sorted row of pair p
};

[[nodiscard]] cudaError_t launch_moe_group(const moe_group_args& args, cudaStream_t stream);

/// Grouped expert matmul: y[r] = W_e . x[x_row[r]] for each sorted row r of
/// expert e (bf16 in, fp32 accumulate, bf16 out). W is the experts' matrices
/// stacked: expert e's rows are [e * n, (e + 1) * n) of `w`.
struct moe_matmul_args {
  const __nv_bfloat16* x = nullptr; ///< input rows; row i at x + i * x_stride
  size_t x_stride = 0;
  const uint32_t* x_row = nullptr;  ///< optional [n_rows]: input row of sorted row r (null: row r)
  const __nv_bfloat16* w = nullptr; ///< [n_expert * n, k] row-major
  size_t w_stride = 0;              ///< elements between rows of w, >= k
  const uint32_t* expert_start = nullptr; ///< [n_expert + 1] device (launch_moe_group's)
  __nv_bfloat16* y = nullptr;       ///< [n_rows, n]; row r at y + r * y_stride
  size_t y_stride = 0;
  uint32_t n_rows = 0;              ///< sorted rows (pairs); REQUIRES: expert_start[n_expert] <= n_rows
  uint32_t n_expert = 0;
  uint32_t n = 0;                   ///< output features per expert
  uint32_t k = 0;                   ///< input features
};

[[nodiscard]] cudaError_t launch_moe_matmul(const moe_matmul_args& args, cudaStream_t stream);

/// out[t] = bf16(sum_j weight[t, j] * y[pair_row[t * k + j]]), in rank order
/// j = 0..k-1, plus sigmoid(shared_gate[t]) * shared[t] when `shared` is set.
struct moe_combine_args {
  const __nv_bfloat16* y = nullptr;  ///< [n_pairs, n] routed expert outputs in sorted-row order
  size_t y_stride = 0;
  const float* weight = nullptr;     ///< [n_tokens, k]
  const uint32_t* pair_row = nullptr; ///< [n_tokens * k]
  const __nv_bfloat16* shared = nullptr; ///< optional [n_tokens, n] shared-expert output
  size_t shared_stride = 0;
  const float* shared_gate = nullptr; ///< [n_tokens] logits; REQUIRED with `shared`
  __nv_bfloat16* out = nullptr;      ///< [n_tokens, n]; must not alias y or shared
  size_t out_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t k = 0;
  uint32_t n = 0;
};

[[nodiscard]] cudaError_t launch_moe_combine(const moe_combine_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
