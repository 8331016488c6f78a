// Causal multi-head attention over a paged KV cache, for prefill chunks (many
// query tokens) and decodes (one) in the same call, with grouped-query heads
// (query head h reads KV head h / (n_head / n_kv_head)). Softmax in fp32.
// CPU reference and CPU engine op; runs on the given pool. The K/V of every
// query token must already be stored (kv_store) before the call.
#pragma once

#include "kernels/reference/paged_kv.hpp"
#include "kernels/reference/thread_pool.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace dynamo::kernels::ref {

/// One sequence's query tokens: positions [start_pos, start_pos + n_query).
/// Query token i attends to keys at positions [0, start_pos + i].
struct attention_sequence {
  uint32_t q_offset = 0;  ///< index of its first query token in q and out
  uint32_t n_query = 0;
  uint32_t start_pos = 0;
  const uint32_t* block_table = nullptr; ///< block ids in position order
  uint32_t n_blocks = 0;  ///< REQUIRES: n_blocks * block_size >= start_pos + n_query
};

struct paged_attention_args {
  const float* q = nullptr;  ///< [n_tokens, n_head, head_dim]; token t at q + t * q_stride
  size_t q_stride = 0;
  float* out = nullptr;      ///< [n_tokens, n_head, head_dim]; token t at out + t * out_stride
  size_t out_stride = 0;
  uint32_t n_head = 0;       ///< REQUIRES: multiple of kv.n_kv_head
  float scale = 1.0f;        ///< usually 1 / sqrt(head_dim)
  std::span<const attention_sequence> seqs;
  paged_kv_view kv;
  thread_pool* pool = nullptr; ///< null: run on the caller only
};

void paged_attention(const paged_attention_args& args);

} // namespace dynamo::kernels::ref
