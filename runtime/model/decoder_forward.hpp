// The decoder forward pass on CPU over a paged KV cache, for every
// architecture decoder_config knows (biases, per-head Q/K norms, RoPE styles
// and scalings, dense or mixture-of-experts FFNs): runs one engine::batch
// (decodes and prefill chunks together as one ragged batch), writes the K/V of
// every new token into its blocks, attends causally over positions
// [0, start_pos + i], and returns logits only for entries with sample = true
// (a fork entry, batch_entry::fork_of, computes nothing and gets no row), the
// final-norm hidden state of the last token of entries with embed = true, and
// on demand (prompt_head) the logits of the tokens with prompt targets.
// Owned by one executor and driven by its step thread; the kernels fan out
// over the given thread pool. A token's logits never depend on the other
// tokens of its batch (MoE experts included).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/model/kv_cache.hpp"
#include "runtime/model/decoder_model.hpp"

#include "kernels/reference/matmul.hpp"
#include "kernels/reference/paged_attention.hpp"
#include "kernels/reference/rope.hpp"
#include "kernels/reference/thread_pool.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace dynamo::model {

/// Logits of the sampled entries of one batch; views into the forward pass's
/// buffers, valid until its next run().
struct forward_logits {
  std::span<const float> data;     ///< [rows, n_vocab]
  std::span<const uint32_t> entry; ///< [rows]: index into batch::entries
  uint32_t n_vocab = 0;
  /// The embed entries' last tokens after the final norm: [hidden rows, n_embd].
  std::span<const float> hidden;
  std::span<const uint32_t> hidden_entry; ///< [hidden rows]: index into batch::entries
  uint32_t n_embd = 0;
  /// [prompt rows]: the entry of each token with a prompt target
  /// (batch_entry::prompt_targets), entries in order, tokens in order within
  /// each; decoder_forward::prompt_head computes their logits.
  std::span<const uint32_t> prompt_entry;

  [[nodiscard]] std::span<const float> row(size_t i) const noexcept { return data.subspan(i * n_vocab, n_vocab); }
  [[nodiscard]] std::span<const float> hidden_row(size_t i) const noexcept {
    return hidden.subspan(i * n_embd, n_embd);
  }
};

struct forward_options {
  /// Reference mode: no int16 rounding of activations before quantized
  /// matmuls (see kernels::ref::matmul_args). Slower; for golden comparisons.
  bool fp32_activations = false;
};

class decoder_forward {
public:
  decoder_forward(std::shared_ptr<const decoder_model> model, kernels::ref::thread_pool& pool,
                forward_options options = {});

  /// Checks a batch against the model and a cache shape without touching
  /// memory: token ids < n_vocab, positions within the context length, block
  /// tables long enough and block ids inside the pool, num_tokens consistent.
  /// Errors are errc::invalid_argument naming the sequence.
  [[nodiscard]] expected<void> check(const engine::batch& b, const kv_cache_shape& kv) const;

  /// check(), then the forward pass. `cache` must have the model's shape.
  [[nodiscard]] expected<forward_logits> run(const engine::batch& b, kv_cache& cache);

  /// After run(): the logits ([rows, n_vocab]) of prompt rows [row0, row0 +
  /// rows) of forward_logits::prompt_entry, valid until the next call or
  /// run(). In slices so that a long prompt chunk never holds all its logits.
  [[nodiscard]] std::span<const float> prompt_head(size_t row0, uint32_t rows);

  [[nodiscard]] const decoder_model& model() const noexcept { return *model_; }

private:
  void prepare(const engine::batch& b, uint32_t block_size);
  void run_layer(uint32_t layer, kv_cache& cache);
  void attention(const decoder_layer_weights& w, const kernels::ref::paged_kv_view& kv);
  /// Adds `bias` (if not empty) to the first bias.size() outputs of every token row of y.
  void add_bias(float* y, size_t stride, const std::vector<float>& bias);
  /// h_ -> tmp_ through the dense SwiGLU FFN.
  void ffn_dense(const decoder_layer_weights& w);
  /// h_ -> tmp_ through the routed experts (and the shared expert, if any).
  void ffn_moe(const moe_layer_weights& w);
  /// The shared expert of h_ into ys_ and its gate logits into shared_gate_ (Qwen2-MoE).
  void shared_expert(const moe_layer_weights& w);
  /// Final norm of x_ + tmp_ at `tokens` into `out` ([tokens, n_embd]).
  void final_norm(std::span<const uint32_t> tokens, float* out);
  void run_head();
  void matmul(const float* x, size_t x_stride, uint32_t n_tokens, std::span<const weight_matrix> w, float* y,
              size_t y_stride);
  /// Splits [0, n) into chunks over the pool for the cheap per-row ops.
  template <class Fn>
  void for_chunks(uint32_t n, Fn&& fn);

  std::shared_ptr<const decoder_model> model_;
  kernels::ref::thread_pool& pool_;
  forward_options options_;
  kernels::ref::rope_table rope_;
  kernels::ref::matmul_workspace workspace_;

  // Per-step state, sized by prepare(); kept across steps to avoid allocation.
  uint32_t n_tokens_ = 0;
  std::vector<uint32_t> ids_;       ///< [n_tokens] token ids, entries in order
  std::vector<uint32_t> positions_; ///< [n_tokens]
  std::vector<uint32_t> slots_;     ///< [n_tokens] block_id * block_size + offset
  std::vector<kernels::ref::attention_sequence> seqs_; ///< one per entry
  std::vector<uint32_t> sample_tokens_;  ///< token index of each sampled row
  std::vector<uint32_t> sample_entries_; ///< entry index of each sampled row
  std::vector<uint32_t> embed_tokens_;   ///< token index of each embed entry's last token
  std::vector<uint32_t> embed_entries_;  ///< entry index of each embed row
  std::vector<uint32_t> prompt_tokens_;  ///< token index of each prompt row
  std::vector<uint32_t> prompt_entries_; ///< entry index of each prompt row
  std::vector<float> x_;      ///< [n_tokens, n_embd] residual stream
  std::vector<float> h_;      ///< [n_tokens, n_embd] normalised input of a sub-block
  std::vector<float> qkv_;    ///< [n_tokens, (n_head + 2 n_kv_head) head_dim]
  std::vector<float> attn_;   ///< [n_tokens, n_head head_dim]
  std::vector<float> tmp_;    ///< [n_tokens, n_embd] sub-block output, added to x_ lazily
  std::vector<float> gu_;     ///< [rows, 2 F] gate | up (rows: tokens, or token-expert pairs)
  std::vector<float> act_;    ///< [rows, F]
  // MoE state (F = n_ff_expert), sized by prepare() for MoE models only.
  std::vector<float> router_;           ///< [n_tokens, n_expert] router logits
  std::vector<uint32_t> expert_;        ///< [n_tokens, k] chosen experts
  std::vector<float> expert_weight_;    ///< [n_tokens, k]
  std::vector<uint32_t> expert_start_;  ///< [n_expert + 1] first sorted row of each expert
  std::vector<uint32_t> pair_token_;    ///< [n_tokens k] token of each sorted row
  std::vector<uint32_t> pair_row_;      ///< [n_tokens, k] sorted row of (token, j)
  std::vector<float> xe_;               ///< [n_tokens k, n_embd] gathered inputs
  std::vector<float> ye_;               ///< [n_tokens k, n_embd] expert outputs
  std::vector<float> ys_;               ///< [n_tokens, n_embd] shared-expert output
  std::vector<float> shared_gate_;      ///< [n_tokens] shared-expert gate logits
  std::vector<float> hs_;     ///< [rows, n_embd] final-norm rows to sample
  std::vector<float> logits_; ///< [rows, n_vocab]
  std::vector<float> he_;     ///< [embed rows, n_embd] final-norm rows of embed entries
  std::vector<float> hp_;     ///< [prompt rows, n_embd] final-norm rows with prompt targets
  std::vector<float> prompt_logits_; ///< [slice rows, n_vocab] (prompt_head)
};

} // namespace dynamo::model
