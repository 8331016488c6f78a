// Next-token sampling from logits: greedy (temperature 0), temperature,
// top-k and top-p. The random number for a token comes from a counter-based
// stream keyed by (seed, sample_position), so a seeded request draws the same
// tokens after preemption, migration or in any batch. Unseeded requests use a
// per-process seed mixed with the sequence id. One sampler per executor
// thread (it keeps scratch buffers); not thread-safe.
#pragma once

#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace dynamo::model {

class sampler {
public:
  explicit sampler(uint64_t process_seed) : process_seed_(process_seed) {}

  /// Picks a token id from `logits` ([n_vocab], REQUIRES: non-empty).
  /// temperature <= 0 (or not finite) is greedy: the lowest id among the
  /// largest logits. top_k <= 0 or >= n_vocab is off; top_p is clamped to
  /// (0, 1] and keeps the smallest most-likely set whose mass reaches it.
  [[nodiscard]] uint32_t sample(std::span<const float> logits, const protocol::sampling_options& opts,
                                uint64_t seq_id, uint32_t sample_position);

  /// The uniform number in [0, 1) of stream `seed` at `position`.
  [[nodiscard]] static double uniform(uint64_t seed, uint32_t position) noexcept;

  /// Index of the largest value (lowest index on ties).
  [[nodiscard]] static uint32_t argmax(std::span<const float> logits) noexcept;

private:
  /// Sorts the first `m` candidates by descending logit, ties by id.
  void sort_prefix(size_t m);

  uint64_t process_seed_;
  std::vector<std::pair<float, uint32_t>> cand_; ///< (logit, id) scratch
};

} // namespace dynamo::model
