// Host-side planning for the CUDA executor, kept free of CUDA so it is unit
// tested on any machine: where each weight lives in the device weight arena
// (with fused QKV and gate|up matrices), which GGUF matrix fills which rows,
// the activation buffers, the split-K attention geometry, KV blocks from free
// memory, CUDA-graph batch buckets, batch validation, and the packing of a
// step's metadata into one staging image copied to the device per step.
// Pure functions and values; any thread.
#pragma once

#include "kernels/logit_edit.hpp"

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/model/decoder_config.hpp"
#include "runtime/model/decoder_model.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dynamo::model {

/// Byte alignment of every tensor in the device arenas (cudaMalloc gives 256).
inline constexpr size_t cuda_tensor_alignment = 256;

/// A 2-D tensor in a device arena: `rows` x `cols` elements, row-major, of
/// bf16 (weights) or fp32 (norm weights), starting `offset` bytes in.
struct cuda_tensor_slot {
  size_t offset = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
  bool f32 = false;

  [[nodiscard]] size_t bytes() const noexcept { return size_t(rows) * cols * (f32 ? 4 : 2); }
  /// An optional tensor the model does not have.
  [[nodiscard]] bool empty() const noexcept { return rows == 0; }
};

struct cuda_layer_slots {
  cuda_tensor_slot attn_norm; ///< [1, n_embd] fp32
  cuda_tensor_slot wqkv;      ///< [(n_head + 2 n_kv_head) head_dim, n_embd]: Q rows, then K, then V
  cuda_tensor_slot bqkv;      ///< [1, (n_head + 2 n_kv_head) head_dim] fp32: bq | bk | bv; empty without biases
  cuda_tensor_slot q_norm;    ///< [1, head_dim] fp32 per-head Q RMSNorm (Qwen3); empty without
  cuda_tensor_slot k_norm;    ///< [1, head_dim] fp32 per-head K RMSNorm; empty without
  cuda_tensor_slot wo;        ///< [n_embd, n_head head_dim]
  cuda_tensor_slot bo;        ///< [1, n_embd] fp32 attention-output bias; empty without
  cuda_tensor_slot ffn_norm;  ///< [1, n_embd] fp32
  // Dense FFN (empty in MoE layers).
  cuda_tensor_slot wgu;       ///< [2 n_ff, n_embd]: gate rows, then up rows
  cuda_tensor_slot wdown;     ///< [n_embd, n_ff]
  // MoE FFN (empty in dense layers); F = n_ff_expert, S = n_ff_shared.
  cuda_tensor_slot router;          ///< [n_expert, n_embd] fp32 (routing stays fp32)
  cuda_tensor_slot wgu_exps;        ///< [n_expert 2F, n_embd]: expert e's gate rows, then its up rows, at row e 2F
  cuda_tensor_slot wdown_exps;      ///< [n_expert n_embd, F]: expert e's rows at row e n_embd
  cuda_tensor_slot shared_gate_inp; ///< [1, n_embd] fp32 gate of the shared expert (Qwen2-MoE); empty without
  cuda_tensor_slot wgu_shexp;       ///< [2S, n_embd]: gate rows, then up rows; empty without
  cuda_tensor_slot wdown_shexp;     ///< [n_embd, S]; empty without
};

/// The device weight arena: every matrix in bf16 (norms, biases and routers
/// fp32), one allocation. Optional tensors have empty slots (rows 0).
struct cuda_weight_layout {
  cuda_tensor_slot token_embd;  ///< [n_vocab, n_embd]; also the LM head when tied
  cuda_tensor_slot output_norm; ///< [1, n_embd] fp32
  cuda_tensor_slot output;      ///< [n_vocab, n_embd]; == token_embd when tied
  std::vector<cuda_layer_slots> layers;
  bool tied = false;
  size_t total_bytes = 0;
};

/// The arena for a model of config `c` whose weights are `w` (the optional
/// tensors it has: biases, Q/K norms; tied embeddings). Layers beyond
/// w.layers.size() get no optional tensors.
[[nodiscard]] cuda_weight_layout plan_weights(const decoder_config& c, const decoder_weights& w);

/// One upload into the arena: either GGUF matrix rows into rows
/// [row0, row0 + matrix.n) of `dst` -- dequantized to bf16 on the device, or
/// to fp32 on the host when dst.f32 (routers) -- or an fp32 vector copied as
/// is into row 0 of `dst` from element col0 on (norms, biases).
struct cuda_upload {
  weight_matrix matrix;          ///< data null for a vector
  std::span<const float> vector; ///< the vector (empty for a matrix)
  cuda_tensor_slot dst;
  uint32_t row0 = 0;
  uint32_t col0 = 0;
};

/// Every upload that fills `layout` from `w`, in arena order. The Q, K and V
/// matrices land in consecutive row ranges of wqkv (their biases in bqkv);
/// gate and up in wgu; expert e's gate and up rows at row e 2F of wgu_exps.
[[nodiscard]] std::vector<cuda_upload> plan_uploads(const decoder_weights& w, const cuda_weight_layout& layout);

/// Split-K geometry for decode attention: keys per partition (a multiple of
/// the block size) and partitions launched, at most `max_partitions_cap`
/// (the partition grows for long contexts). partition_size 0 disables it.
struct cuda_attention_split {
  uint32_t partition_size = 0;
  uint32_t max_partitions = 1;
};
[[nodiscard]] cuda_attention_split plan_attention_split(uint32_t max_model_len, uint32_t block_size,
                                                        uint32_t partition, uint32_t max_partitions_cap = 64) noexcept;

/// The split for a decode step of `n_seqs` sequences. The workspace holds
/// `max_seqs` x `base.max_partitions` partials per head, so a smaller step may
/// cut its keys into more, shorter partitions (down to `min_partition` keys,
/// a block multiple): more CTAs work on few sequences, which is what a batch of
/// one needs. Returns `base` when it cannot split finer.
[[nodiscard]] cuda_attention_split step_attention_split(const cuda_attention_split& base, uint32_t max_seqs,
                                                        uint32_t n_seqs, uint32_t block_size,
                                                        uint32_t min_partition = 64) noexcept;

/// Activation buffers of one step at the executor's limits (one arena). FFN
/// rows are tokens in dense layers and token-expert pairs (P = max_tokens *
/// n_expert_used of them) in MoE layers; u32 buffers use fp32-sized cells.
struct cuda_activation_layout {
  cuda_tensor_slot x;        ///< [max_tokens, n_embd] fp32 residual stream
  cuda_tensor_slot h;        ///< [max_tokens, n_embd] bf16 norm output
  cuda_tensor_slot qkv;      ///< [max_tokens, (n_head + 2 n_kv_head) head_dim] bf16
  cuda_tensor_slot attn;     ///< [max_tokens, n_head head_dim] bf16
  cuda_tensor_slot delta;    ///< [max_tokens, n_embd] bf16 sub-block output (added into x lazily)
  /// [max_tokens, W] bf16 gate|up: W = 2 n_ff (dense), or the larger of
  /// n_expert_used 2 n_ff_expert (P rows of 2 n_ff_expert) and 2 n_ff_shared.
  cuda_tensor_slot gu;
  cuda_tensor_slot act;      ///< [max_tokens, W / 2] bf16 SwiGLU output, the same rows
  cuda_tensor_slot hs;       ///< [max_rows, n_embd] bf16 final-norm rows to sample
  cuda_tensor_slot logits;   ///< [max_rows, n_vocab] fp32
  cuda_tensor_slot attn_ws;  ///< [max_seqs * n_head * max_partitions, head_dim + 2] fp32 split-K partials
  cuda_tensor_slot sampled;  ///< [1, max_rows] u32
  // MoE models only (empty otherwise).
  cuda_tensor_slot moe_expert; ///< [1, P] u32 expert of pair t * k + j
  cuda_tensor_slot moe_weight; ///< [1, P] fp32 its routing weight
  cuda_tensor_slot moe_start;  ///< [1, n_expert + 1] u32 first sorted row of each expert
  cuda_tensor_slot pair_token; ///< [1, P] u32 token of each sorted row
  cuda_tensor_slot pair_row;   ///< [1, P] u32 sorted row of each pair
  cuda_tensor_slot moe_y;      ///< [P, n_embd] bf16 expert outputs by sorted row
  cuda_tensor_slot shared_gate; ///< [1, max_tokens] fp32 shared-expert gate logits; empty without
  cuda_tensor_slot shared_y;   ///< [max_tokens, n_embd] bf16 shared-expert output; empty without
  size_t total_bytes = 0;
};

[[nodiscard]] cuda_activation_layout plan_activations(const decoder_config& c, uint32_t max_tokens, uint32_t max_seqs,
                                                      const cuda_attention_split& split);

/// KV blocks that fit: (fraction * total - used - reserve) / block_bytes,
/// where used = total - free (weights, activations, other processes).
/// KV blocks = min(fraction * total - own - reserve, free - reserve) / block: the
/// fraction bounds this executor alone (other executors and processes on the
/// device only shrink `free`), so several executors can share one GPU.
struct kv_memory_inputs {
  size_t total_bytes = 0;   ///< cudaMemGetInfo total
  size_t free_bytes = 0;    ///< cudaMemGetInfo free, after weights and activations
  double fraction = 0.9;    ///< of total this executor may use
  size_t reserve_bytes = 0; ///< kept free for graphs, cuBLAS and the runtime
  size_t block_bytes = 0;   ///< one KV block, all layers, K and V
  size_t own_bytes = 0;     ///< what this executor already holds (weights, activations, buffers)
};
[[nodiscard]] uint32_t kv_blocks_for_memory(const kv_memory_inputs& in) noexcept;

/// Captured batch sizes: 1, 2, 4, ... up to max_batch (and max_batch itself).
[[nodiscard]] std::vector<uint32_t> graph_buckets(uint32_t max_batch);
/// The smallest bucket >= n, or nullopt when n exceeds them all (or n == 0).
[[nodiscard]] std::optional<uint32_t> choose_graph_bucket(std::span<const uint32_t> buckets, uint32_t n) noexcept;

/// Limits a batch must respect (besides the model's).
struct cuda_batch_limits {
  uint32_t n_vocab = 0;
  uint32_t max_model_len = 0;
  uint32_t block_size = 16;
  uint32_t num_blocks = 0;
  uint32_t max_tokens = 0;
  uint32_t max_seqs = 0;
};
/// The CPU forward pass's checks (non-empty entries, positions within the
/// context, block tables long enough with ids in the pool, token ids in the
/// vocabulary, num_tokens consistent) plus the executor's capacity. Errors
/// are errc::invalid_argument naming the sequence.
[[nodiscard]] expected<void> check_batch(const engine::batch& b, const cuda_batch_limits& limits);

/// Sampling parameters of one logits row; byte-compatible with
/// kernels::gpu::sample_params (static_asserts in the executor).
struct cuda_sample_row {
  uint64_t seed = 0;
  uint32_t position = 0;
  float temperature = 0.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;
  uint32_t row = 0;          ///< the logits row the draw reads
  float min_p = 0.0f;
  int32_t num_logprobs = -1; ///< < 0: none
  uint32_t pad = 0;
};

/// One logit edit of one logits row; byte-compatible with
/// kernels::gpu::logit_edit_item (static_asserts in the executor).
struct cuda_edit_item {
  uint32_t row = 0;
  uint32_t pad = 0;
  kernels::logit_edit edit;
  kernels::logit_penalties penalties;
};

/// Where each metadata array sits in the per-step staging image (byte
/// offsets, 16-aligned) for given capacities; identical on host and device.
struct cuda_step_layout {
  uint32_t token_cap = 0, seq_cap = 0, row_cap = 0, table_stride = 0;
  size_t ids = 0;          ///< u32 [token_cap] token ids
  size_t positions = 0;    ///< u32 [token_cap]
  size_t slots = 0;        ///< u32 [token_cap] KV slot (block * block_size + offset), or no-slot
  size_t token_seq = 0;    ///< u32 [token_cap] block-table row of each token
  size_t lm_rows = 0;      ///< u32 [row_cap] token index of each LM-head row
  size_t tables = 0;       ///< u32 [seq_cap, table_stride] block tables
  size_t params = 0;       ///< cuda_sample_row [row_cap]
  size_t total_bytes = 0;
};
[[nodiscard]] cuda_step_layout make_step_layout(uint32_t token_cap, uint32_t seq_cap, uint32_t row_cap,
                                                uint32_t table_stride) noexcept;

/// Slot of a padding token: its K/V is not stored.
inline constexpr uint32_t cuda_no_slot = 0xffffffffu;

/// A batch flattened into the arrays the kernels read. For a graph step it is
/// padded to `pad_to` tokens: padding tokens are id 0 at position 0 with no
/// slot, each its own sequence whose table row is all block 0, and every
/// token gets an LM-head row (row r = token r).
struct cuda_packed_step {
  uint32_t n_tokens = 0;   ///< tokens including padding
  uint32_t n_seqs = 0;     ///< block-table rows including padding
  uint32_t n_lm_rows = 0;  ///< LM-head rows
  uint32_t n_sample_rows = 0; ///< rows the sampler runs on: logits rows [0, n_sample_rows)
  bool decode_only = false;   ///< every entry has exactly one token
  std::vector<uint32_t> ids, positions, slots, token_seq, lm_rows, tables;
  std::vector<cuda_sample_row> params; ///< [n_sample_rows] draws (a fork's reads its parent's row)
  std::vector<int32_t> row_entry;      ///< [n_sample_rows]: batch entry of the draw, or -1 (ignored)
  std::vector<cuda_edit_item> edits;   ///< logit edits of the sampled rows (a fork's are its parent's)
  /// Grammar masks (batch_entry::allowed_tokens) of the sampled rows that have
  /// one: mask r (mask_words words at masks[r * mask_words]) applies to
  /// logits row mask_rows[r], before the edits. A fork's is its parent's.
  std::vector<uint32_t> mask_rows;
  std::vector<uint64_t> masks;
  uint32_t mask_words = 0;
};

/// Flattens `b` (already checked). `pad_to` > 0 requests a graph step: REQUIRES
/// decode-only and entries.size() <= pad_to. Unseeded requests draw from
/// rng_stream_seed(process_seed, seq_id), like the CPU sampler. A fork entry
/// (fork_of) adds a draw on its parent's logits row and nothing else.
[[nodiscard]] cuda_packed_step pack_step(const engine::batch& b, uint32_t block_size, uint32_t table_stride,
                                         uint64_t process_seed, uint32_t pad_to = 0);

/// Writes `p` into `image` (layout.total_bytes bytes) at `layout`'s offsets.
/// REQUIRES: p fits the layout's capacities.
void write_step(const cuda_packed_step& p, const cuda_step_layout& layout, std::span<std::byte> image) noexcept;

} // namespace dynamo::model
