// Next-token sampling from logits (vLLM's order): the grammar mask, the row's logit edits
// (logit_bias, the min_tokens mask, repetition / frequency / presence
// penalties, kernels/logit_edit.hpp), then greedy (temperature 0) or
// temperature, min_p, top-k and top-p; and the chosen token's logprobs. The
// random number for a token comes from a counter-based stream keyed by (seed,
// sample_position), so a seeded request draws the same tokens after
// preemption, migration or in any batch. Unseeded requests use a per-process
// seed mixed with the sequence id. The CPU reference of kernels/sampling.cu
// and kernels/logits_process.cu. One sampler per executor thread (it keeps
// scratch buffers); not thread-safe.
#pragma once

#include "kernels/logit_edit.hpp"
#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace dynamo::model {

struct sample_result {
  uint32_t token = 0;
  /// Set when opts.logprobs asks for them (protocol::token_logprob).
  std::optional<protocol::token_logprob> logprobs;
};

class sampler {
public:
  explicit sampler(uint64_t process_seed) : process_seed_(process_seed) {}

  /// Picks a token id from `logits` ([n_vocab], REQUIRES: non-empty) after
  /// masking out the tokens whose bit is clear in `allowed` (the grammar mask
  /// of structured outputs, kernels/reference/token_bitmask; empty: no mask),
  /// then applying `edits` (distinct tokens; ids >= n_vocab are ignored) with
  /// opts' penalties. temperature <= 0 (or not finite) or top_k == 1 is
  /// greedy: the lowest id among the largest processed logits. Otherwise,
  /// on softmax(logits / T): min_p (in [0, 1]; keeps the tokens whose
  /// probability is at least min_p x the largest), top_k (<= 0 or >= n_vocab
  /// is off) and top_p (clamped to (0, 1]; keeps the smallest most-likely set
  /// whose mass reaches it), then an inverse-CDF draw scanning the kept
  /// tokens most likely first when any of the three truncates (is on), in id
  /// order otherwise. Logprobs: the log-softmax, in double, of the processed
  /// logits / T (T = 1 when greedy), before truncation.
  [[nodiscard]] sample_result sample(std::span<const float> logits, const protocol::sampling_options& opts,
                                     std::span<const kernels::logit_edit> edits, uint64_t seq_id,
                                     uint32_t sample_position, std::span<const uint64_t> allowed = {});

  /// sample() without edits, the token only.
  [[nodiscard]] uint32_t sample(std::span<const float> logits, const protocol::sampling_options& opts,
                                uint64_t seq_id, uint32_t sample_position) {
    return sample(logits, opts, {}, seq_id, sample_position).token;
  }

  /// The uniform number in [0, 1) of stream `seed` at `position`.
  [[nodiscard]] static double uniform(uint64_t seed, uint32_t position) noexcept;

  /// Index of the largest value (lowest index on ties).
  [[nodiscard]] static uint32_t argmax(std::span<const float> logits) noexcept;

  /// The log-softmax of `logits / temperature` in double (temperature <= 0 or
  /// not finite: 1): logprob of `token` and of the `k` most likely tokens
  /// (ties: lower id first). What sample() reports.
  [[nodiscard]] protocol::token_logprob logprobs(std::span<const float> logits, float temperature,
                                                 uint32_t token, uint32_t k);

private:
  /// Sorts the first `m` candidates by descending logit, ties by id.
  void sort_prefix(size_t m);
  /// The draw of a non-greedy sample (the scan described above).
  [[nodiscard]] uint32_t draw(std::span<const float> logits, const protocol::sampling_options& o, double u);

  uint64_t process_seed_;
  std::vector<std::pair<float, uint32_t>> cand_; ///< (logit, id) scratch
  std::vector<float> processed_;                 ///< edited logits scratch
};

} // namespace dynamo::model
