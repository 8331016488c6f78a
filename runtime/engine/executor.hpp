// The contract between the scheduler and whatever computes a step: the CPU
// model, the CUDA model or the mocker. The scheduler owns *which* KV blocks a
// sequence uses (block ids); the executor owns the KV memory behind them.
// An executor is driven by one thread (the worker's step loop); not thread-safe.
#pragma once

#include "kernels/logit_edit.hpp"
#include "runtime/core/error.hpp"
#include "runtime/protocol/kv_transfer.hpp"
#include "runtime/protocol/llm.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::engine {

/// One sequence's share of a step.
///
///   sequence:  | computed (KV cached) ........ | tokens (this step) | not yet |
///   position:  0                      start_pos  start_pos+tokens.size()
///
/// `block_table[i]` holds positions [i*block_size, (i+1)*block_size); it covers
/// at least start_pos + tokens.size() positions. KV for the new tokens must be
/// written into those blocks before attention reads them.
struct batch_entry {
  uint64_t seq_id = 0;                ///< stable id of the sequence in the scheduler
  std::vector<uint32_t> tokens;       ///< token ids to compute this step
  uint32_t start_pos = 0;             ///< position of tokens[0]
  std::vector<uint32_t> block_table;  ///< KV block ids, in position order
  bool sample = false;                ///< sample a next token after the last one
  /// Return the final-norm hidden state of the last token instead
  /// (batch_result::embeddings); an embed request's last prompt chunk, never
  /// with `sample`.
  bool embed = false;
  protocol::sampling_options sampling;///< used when `sample`
  /// Tokens the sequence holds after this step, used to derive per-position
  /// RNG streams so that seeded sampling survives preemption and migration.
  uint32_t sample_position = 0;
  /// Applied to the logits before sampling (kernels::apply_logit_edit with
  /// sampling's penalties): logit_bias, penalties, the min_tokens mask.
  /// Sorted by token, distinct tokens.
  std::vector<kernels::logit_edit> logit_edits;
  /// The grammar mask of a guided request (sampling.guided), used when
  /// `sample`: bit id (word id / 64) set = token id may be sampled; the
  /// others, and every id past the mask, get -inf before logit_edits
  /// (kernels/reference/token_bitmask). Empty: no grammar.
  std::vector<uint64_t> allowed_tokens;
  uint32_t choice = 0; ///< the request's choice this sequence is (n > 1)
  /// A forked choice's first token (n > 1): no tokens to compute; sample from
  /// the logits of the entry with this seq_id (the prompt's last step, earlier
  /// in this batch, with the same edits) with this entry's own RNG stream.
  std::optional<uint64_t> fork_of;
  /// Prompt logprobs (sampling.prompt_logprobs): the prompt token at
  /// position start_pos + i + 1 for each token i < prompt_targets.size()
  /// (<= tokens.size()); the executor returns the logprob of each under the
  /// raw distribution at token i (batch_result::prompt_logprobs). Empty: none.
  std::vector<uint32_t> prompt_targets;
};

/// Copy block `src`'s KV into block `dst` before the step's forward pass
/// (copy-on-write of a prompt's partial last block shared by n choices).
struct block_copy {
  uint32_t src = 0;
  uint32_t dst = 0;
};

struct batch {
  std::vector<batch_entry> entries; ///< decodes first, then prefill chunks
  uint32_t num_tokens = 0;          ///< sum of entries[i].tokens.size()
  std::vector<block_copy> block_copies; ///< done before any KV is written or read
};

struct batch_result {
  /// Aligned with batch::entries: the sampled token where entry.sample was set.
  std::vector<std::optional<uint32_t>> sampled;
  /// Aligned with batch::entries where any entry asks for logprobs
  /// (sampling.logprobs), else may be empty: the sampled token's logprobs.
  std::vector<std::optional<protocol::token_logprob>> logprobs;
  /// Aligned with batch::entries where any entry has `embed`, else may be
  /// empty: the final-norm hidden state (n_embd floats) of each embed entry.
  std::vector<std::vector<float>> embeddings;
  /// Aligned with batch::entries where any entry has prompt_targets, else may
  /// be empty: one logprob per target, with sampling.prompt_logprobs alternatives.
  std::vector<std::vector<protocol::token_logprob>> prompt_logprobs;
  /// Simulated compute time (mocker only; zero for real executors).
  std::chrono::microseconds simulated{0};
};

/// Shape of the KV cache the executor can hold.
struct kv_geometry {
  uint32_t block_size = 16; ///< tokens per block
  uint32_t num_blocks = 0;  ///< blocks in the pool
};

/// The executor's KV memory as the transfer plane sees it: block i occupies
/// [base + i * block_stride, + layout.bytes_per_block). The memory belongs to the
/// executor and lives as long as it does. Bytes of a block may be read or written
/// from outside only while the scheduler keeps that block out of every batch
/// (a held prefill block, a decode block waiting for KV).
struct kv_memory_view {
  void* base = nullptr;
  uint64_t block_stride = 0;
  uint32_t num_blocks = 0;
  protocol::kv_layout layout;
  bool on_device = false; ///< CUDA device memory (base is the cudaMalloc base), not host memory
  int device = 0;         ///< the CUDA device ordinal when on_device
};

class executor {
public:
  virtual ~executor() = default;

  /// Runs b.block_copies, then one forward pass (or simulates it), then
  /// samples. A batch may hold copies and no entries. An error (e.g. a device
  /// error) fails the whole step; the worker then reports itself unhealthy.
  [[nodiscard]] virtual expected<batch_result> execute(const batch& b) = 0;

  [[nodiscard]] virtual kv_geometry geometry() const noexcept = 0;

  /// Largest sequence length (prompt + output) the model supports.
  [[nodiscard]] virtual uint32_t context_length() const noexcept = 0;

  /// Short name for logs and metrics ("mocker", "cpu", "cuda").
  [[nodiscard]] virtual std::string name() const = 0;

  /// Whether execute() answers batch_entry::embed; engine_core refuses embed
  /// requests otherwise.
  [[nodiscard]] virtual bool computes_embeddings() const noexcept { return false; }

  /// Whether execute() answers batch_entry::prompt_targets; engine_core
  /// refuses requests with sampling.prompt_logprobs otherwise.
  [[nodiscard]] virtual bool computes_prompt_logprobs() const noexcept { return false; }

  /// The KV memory behind the block ids, for KV transfers; nullopt when the
  /// executor has none to expose (the mocker, an executor not wired for it).
  [[nodiscard]] virtual std::optional<kv_memory_view> kv_memory() { return std::nullopt; }

  /// The layout a prefill result advertises and a decode request must match;
  /// nullopt: this executor cannot take part in disaggregation. Defaults to
  /// kv_memory()'s layout; the mocker, which holds no bytes, names a synthetic one.
  [[nodiscard]] virtual std::optional<protocol::kv_layout> kv_transfer_layout() {
    auto m = kv_memory();
    return m ? std::optional{m->layout} : std::nullopt;
  }

  /// Simulated time to onboard KV blocks from the KV block manager's host
  /// and disk tiers (the mocker's timing model); zero for real executors,
  /// whose copies take real time.
  [[nodiscard]] virtual std::chrono::microseconds simulated_onboard_time(uint64_t host_blocks,
                                                                         uint64_t disk_blocks) const {
    (void)host_blocks;
    (void)disk_blocks;
    return std::chrono::microseconds{0};
  }
};

} // namespace dynamo::engine
