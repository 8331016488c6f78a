// Causal grouped-query attention over the paged KV cache on the GPU, for
// prefill chunks (many query tokens) and decodes (one) in the same launch.
// Query token t attends to keys at positions [0, positions[t]] of its
// sequence (block table row token_seq[t]); its own K/V must already be stored.
//
// One CTA per (query tile, KV head[, key partition]): a tile is up to 16
// consecutive query tokens of one sequence (fewer for wide heads), and the CTA
// handles all the query heads of the KV head's group for all of them, so each
// K/V tile of 32 keys is loaded once into shared memory for tile x group rows.
// Online softmax in fp32. Tokens that do not lead a tile exit at once.
// Split steps (decode) with 16-byte aligned rows, head_dim <= 128 and enough
// (token, KV head) pairs use a decode kernel instead:
// one CTA per (token, KV head, partition), each warp scoring its own chunks of
// 32 keys one key per lane, with no block-wide barrier inside the key loop.
// Split-K (flash-decoding): with partition_size > 0 each CTA covers one
// partition of keys and writes an unnormalised partial (acc, max, sum) to the
// workspace; a second kernel merges the partitions. Use it for decode-heavy
// batches with long contexts; prefill passes partition_size = 0.
// Limits: head_dim <= 256, n_head / n_kv_head <= 8.
// CPU reference: kernels/reference/paged_attention.hpp.
#pragma once

#include "kernels/paged_kv.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

struct paged_attention_args {
  const __nv_bfloat16* q = nullptr; ///< [n_tokens, n_head, head_dim]; token t at q + t * q_stride
  size_t q_stride = 0;
  __nv_bfloat16* out = nullptr;     ///< [n_tokens, n_head, head_dim]; token t at out + t * out_stride
  size_t out_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n_head = 0;              ///< REQUIRES: multiple of kv.n_kv_head, group <= 8
  float scale = 1.0f;               ///< usually 1 / sqrt(head_dim)
  paged_kv kv;                      ///< REQUIRES: kv.head_dim <= 256
  const uint32_t* positions = nullptr;    ///< [n_tokens] device: position of each query token
  const uint32_t* token_seq = nullptr;    ///< [n_tokens] device: row of block_tables for the token
  const uint32_t* block_tables = nullptr; ///< [n_seqs, block_table_stride] device: block ids in position order
  uint32_t block_table_stride = 0;
  /// Split-K: keys per partition (0: no split). The last partition also takes
  /// any keys beyond max_partitions * partition_size, so results stay exact.
  uint32_t partition_size = 0;
  uint32_t max_partitions = 1;      ///< partitions launched per (token, KV head) when splitting
  float* workspace = nullptr;       ///< split only: paged_attention_workspace_floats(...) floats, device
  /// Split steps use the decode kernel from this many (token, KV head) pairs on
  /// (fewer leave its warps idle: the query-tile kernel is faster there). Tests
  /// pass 0 or UINT32_MAX to pick one kernel.
  uint32_t decode_kernel_min_rows = 96;
};

/// Floats of workspace a split launch needs.
[[nodiscard]] inline size_t paged_attention_workspace_floats(uint32_t n_tokens, uint32_t n_head, uint32_t head_dim,
                                                             uint32_t max_partitions) noexcept {
  return static_cast<size_t>(n_tokens) * n_head * max_partitions * (head_dim + 2);
}

/// Launches the attention kernel and, when splitting, the merge kernel.
[[nodiscard]] cudaError_t launch_paged_attention(const paged_attention_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
