// Worker selection (research/dynamo.md 3.6): Dynamo's KV cost function with
// argmin / softmax choice, plus the round-robin and random baselines. Selectors
// own a seeded RNG so tests and simulations replay exactly. Not thread-safe.
#pragma once

#include "runtime/route/worker_key.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace dynamo::route {

/// One worker's inputs to the cost function and its logit.
struct candidate_cost {
  worker_key worker;
  uint32_t overlap_blocks = 0; ///< cached prefix blocks on this worker
  /// Prompt tokens it need not compute: its device prefix, plus the blocks it
  /// holds only in a KVBM tier at the lower-tier weight (what the request is
  /// booked with when routed there).
  uint64_t cached_tokens = 0;
  double prefill_tokens = 0;   ///< active prefill tokens + this request's uncached tokens
  double decode_blocks = 0;    ///< active decode blocks + this request's new blocks
  uint64_t tree_size = 0;      ///< blocks the index holds for this worker
  /// decode_blocks past the worker's KV capacity (0: it fits, or the capacity
  /// is unknown): the request would wait for running ones to finish there.
  double overflow_blocks = 0;
  double logit = 0;
};

/// overlap_score_weight * prefill_tokens / block_size + decode_blocks.
[[nodiscard]] double kv_logit(double overlap_score_weight, double prefill_tokens,
                              uint32_t block_size, double decode_blocks) noexcept;

/// The two sides of kv_logit priced in one unit, time, from an engine's
/// timings: the logit / step_ms_per_block estimates the milliseconds the
/// request's prefill and the worker's load cost.
struct timing_costs {
  double prefill_ms_per_block = 0; ///< computing one prompt block
  double step_ms_per_block = 0;    ///< what one more resident KV block adds to a step
  double onboard_ms_per_block = 0; ///< loading one block from a KVBM tier
};
struct cost_weights {
  double overlap_score_weight = 1.0;
  double lower_tier_weight = 0.5;
};
/// overlap_score_weight = prefill_ms_per_block / step_ms_per_block; a
/// lower-tier block saves its prefill less its load: lower_tier_weight =
/// 1 - onboard / prefill (clamped to [0, 1]). Inputs must be > 0 (onboard >= 0).
[[nodiscard]] cost_weights weights_from_timing(const timing_costs& t) noexcept;

/// Softmax probabilities of choosing each logit at temperature > 0: with
/// range = max - min, p_i ~ exp(-(logit_i - min) / (range * temperature));
/// uniform when all logits are equal.
[[nodiscard]] std::vector<double> softmax_probabilities(std::span<const double> logits,
                                                        double temperature);

/// A uniform double in [0, 1) from 53 random bits (portable, unlike
/// std::uniform_real_distribution).
[[nodiscard]] double uniform01(std::mt19937_64& rng) noexcept;

class kv_selector {
public:
  explicit kv_selector(uint64_t seed);

  /// Index of the chosen candidate (candidates must be non-empty, logits set).
  /// Temperature 0: the smallest logit; ties go to the smallest tree_size, then
  /// uniformly at random. Otherwise: a draw from softmax_probabilities.
  [[nodiscard]] size_t select(std::span<const candidate_cost> candidates, double temperature);

private:
  std::mt19937_64 rng_;
  std::vector<size_t> ties_;
  std::vector<double> logits_;
};

class round_robin_selector {
public:
  /// Next index in [0, n) (n > 0), cycling.
  [[nodiscard]] size_t select(size_t n) noexcept;

private:
  size_t next_ = 0;
};

class random_selector {
public:
  explicit random_selector(uint64_t seed) : rng_(seed) {}
  /// Uniform index in [0, n) (n > 0).
  [[nodiscard]] size_t select(size_t n) noexcept;

private:
  std::mt19937_64 rng_;
};

} // namespace dynamo::route
