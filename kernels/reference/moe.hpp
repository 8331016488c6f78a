// Mixture-of-experts FFN steps around the expert matmuls, the CPU reference of
// kernels/moe.cu and what the CPU engine runs:
//  - route: per token a softmax over its router logits, the top-k experts
//    (ties go to the lower id) and their weights (the selected probabilities,
//    renormalised to sum 1 when asked, times a scale);
//  - group: the (token, rank) pairs sorted by expert, stable, so each expert's
//    rows form one deterministic batch;
//  - combine: each token's expert outputs summed in rank order, plus the
//    sigmoid-gated shared expert (Qwen2-MoE).
// Pure functions over caller buffers; any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct moe_route_args {
  const float* logits = nullptr; ///< [n_tokens, n_expert]; token t at logits + t * logits_stride
  size_t logits_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n_expert = 0;
  uint32_t k = 0;                ///< experts per token; REQUIRES: 1 <= k <= n_expert
  bool normalize = false;        ///< weights /= sum of the k selected probabilities
  float scale = 1.0f;            ///< weights *= scale (after normalising)
  uint32_t* expert = nullptr;    ///< [n_tokens, k] out: expert ids, most probable first
  float* weight = nullptr;       ///< [n_tokens, k] out
};

void moe_route(const moe_route_args& args);

/// A counting sort of the pairs p = t * k + j by expert[p]; pairs of one
/// expert keep their order (tokens ascending).
struct moe_group_args {
  const uint32_t* expert = nullptr; ///< [n_pairs]; REQUIRES: every id < n_expert
  uint32_t n_pairs = 0;
  uint32_t k = 0;                   ///< pairs per token
  uint32_t n_expert = 0;
  uint32_t* expert_start = nullptr; ///< [n_expert + 1] out: expert e owns sorted rows [start[e], start[e + 1])
  uint32_t* pair_token = nullptr;   ///< [n_pairs] out: token of sorted row r
  uint32_t* pair_row = nullptr;     ///< [n_pairs] out: sorted row of pair p
};

void moe_group(const moe_group_args& args);

/// out[t] = sum_j weight[t, j] * y[pair_row[t * k + j]] (j = 0..k-1, in that
/// order), then out[t] += sigmoid(shared_gate[t]) * shared[t] when `shared`.
struct moe_combine_args {
  const float* y = nullptr;          ///< expert outputs by sorted row; row r at y + r * y_stride
  size_t y_stride = 0;
  const float* weight = nullptr;     ///< [n_tokens, k]
  const uint32_t* pair_row = nullptr; ///< [n_tokens * k]
  const float* shared = nullptr;     ///< optional [n_tokens, n]; token t at shared + t * shared_stride
  size_t shared_stride = 0;
  const float* shared_gate = nullptr; ///< [n_tokens] logits; REQUIRED with `shared`
  float* out = nullptr;              ///< [n_tokens, n]; token t at out + t * out_stride
  size_t out_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t k = 0;
  uint32_t n = 0;
};

void moe_combine(const moe_combine_args& args);

} // namespace dynamo::kernels::ref
