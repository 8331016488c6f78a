// The engine profile the SLA planner and dynamo-configure size deployments
// from (research/dynamo.md 6.5, Dynamo's profile_sla): prefill time against
// prompt length and prefix-hit fraction, decode step time against batch and
// context, and the KV capacity; its JSON file. Measured by runtime/plan/profiler
// (dynamo-profile). Plain values.
#pragma once

#include "runtime/core/error.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace dynamo::plan {

struct prefill_point {
  uint32_t isl = 0;
  double prefix_hit = 0;      ///< requested share of the prompt in the prefix cache
  uint32_t cached_tokens = 0; ///< what the engine reported as cached
  double ms = 0;              ///< first token after this long (all prefill steps)
};

struct decode_point {
  uint32_t batch = 0;
  uint32_t context = 0;
  double step_ms = 0;         ///< mean time of one decode step of the whole batch
};

/// One engine step that prefills a chunk of `prefill_tokens` prompt tokens
/// while `batch` sequences of `context` tokens decode (dynamo-profile
/// --mixed): its time, and a pure decode step of the same batch right before.
struct mixed_point {
  uint32_t batch = 0;
  uint32_t context = 0;
  uint32_t prefill_tokens = 0;
  double step_ms = 0;
  double decode_ms = 0;
};

/// One point of dynamo-profile --handoff's probes: at `x` (a hand-off's prompt
/// tokens, or a step's sequences) the baseline took `base_ms` (the same prompt
/// prefilled locally, or the profile's decode step) and the launched cluster
/// `measured_ms` (the prompt handed off, or the median inter-token gap).
struct cost_point {
  uint32_t x = 0;
  double base_ms = 0;
  double measured_ms = 0;
};

/// What a launched cluster adds over its baseline, as a line fixed_ms +
/// per_unit_ms x units, with the points it was fitted to (fit_cost). The
/// hand-off's units are the prompt's KV blocks (kv_blocks), the step
/// overhead's the sequences in the step.
struct linear_cost {
  double fixed_ms = 0;
  double per_unit_ms = 0;
  std::vector<cost_point> points;
  [[nodiscard]] double ms(double units) const noexcept { return fixed_ms + per_unit_ms * units; }
};

/// KV blocks of `tokens` tokens (block_size 0 counts as 1).
[[nodiscard]] uint32_t kv_blocks(uint32_t tokens, uint32_t block_size) noexcept;

/// Least-squares line of measured - base against units_of(x), both terms kept
/// >= 0: a negative slope is dropped (the mean, flat; at least 0), a negative
/// intercept refits through the origin. No points: zeros.
[[nodiscard]] linear_cost fit_cost(std::vector<cost_point> points, const std::function<double(uint32_t)>& units_of);

struct engine_profile {
  std::string engine;         ///< "mocker", "cpu", "cuda"
  std::string model;
  uint32_t max_kv_tokens = 0; ///< blocks x block size
  uint32_t max_num_seqs = 0;
  uint32_t max_num_batched_tokens = 0;
  uint32_t max_model_len = 0;
  uint32_t block_size = 16;   ///< KV block tokens
  uint32_t threads = 0;       ///< cpu engine compute threads as configured (0: all cores)
  bool simulated = false;     ///< times are the mocker's simulated durations
  std::vector<prefill_point> prefill;
  std::vector<decode_point> decode;
  std::vector<mixed_point> mixed; ///< measured mixed steps (--mixed; older profiles lack them)
  std::vector<std::string> skipped; ///< points that did not fit (context, KV), with why
  /// Measured with dynamo-profile --handoff (older profiles lack both): the
  /// extra TTFT of a prefill -> decode hand-off (routing to the prefill worker,
  /// the result back, the decode worker's admission and KV pull) per KV block
  /// of the prompt, and what a launched worker adds to every step (its own
  /// compute, a token message per sequence, the frontend) per sequence.
  std::optional<linear_cost> handoff;
  std::optional<linear_cost> step_overhead;
};

/// One engine step's prompt work, added up chunk by chunk (step_times::add_chunk)
/// and priced by step_times::step_ms(const step_work&, ...).
struct step_work {
  double prefill_tokens = 0; ///< prompt tokens of every chunk
  double chunk_ms = 0;       ///< the chunks' own costs (per-sequence pricing)
};

/// Whether a step's prompt chunks are priced one sequence at a time (a real
/// engine: "cpu", "cuda"; each chunk attends only to its own sequence) or as
/// one prompt of all their tokens (the mocker's timing model, which charges
/// the step's total new tokens; also profiles without an engine name).
[[nodiscard]] bool prices_prefill_per_sequence(const engine_profile& p) noexcept;

/// The profile's interpolation compiled once for fast lookups (the SLA
/// planner's sizing and dynamo-configure's simulator, which asks millions of
/// times): no allocation per call. prefill_ms_at and decode_step_ms_at are
/// this class on a fresh copy.
class step_times {
public:
  explicit step_times(const engine_profile& p);
  [[nodiscard]] bool has_prefill() const noexcept { return !prefill_.empty(); }
  [[nodiscard]] bool has_decode() const noexcept { return !decode_.empty(); }
  /// As prefill_ms_at (requires has_prefill()).
  [[nodiscard]] double prefill_ms(double isl) const noexcept;
  /// As decode_step_ms_at (requires has_decode()).
  [[nodiscard]] double decode_step_ms(double batch, double context) const noexcept;
  /// One engine step of `prefill_tokens` new prompt tokens plus `decode_batch`
  /// sequences of mean `context` tokens (requires both). Additive, as the
  /// mocker's timing (prefill term + decode term): a profiled prefill already
  /// contains the decode term of its one sampled sequence, so
  ///   prefill_ms(T) + decode_step_ms(b, ctx) - decode_step_ms(1, T),
  /// at least the larger of the two parts; either part alone when the other is 0.
  [[nodiscard]] double step_ms(double prefill_tokens, double decode_batch, double context) const noexcept;

  /// Adds a chunk of `tokens` prompt tokens after the `start` its sequence
  /// already has in the KV cache (computed or a prefix hit) to `w`. Priced per
  /// sequence (prices_prefill_per_sequence): prefill_ms(start + tokens) -
  /// prefill_ms(start), what the longer prompt costs beyond the shorter; a
  /// chunk from 0 less the step's fixed part (decode_step_ms(1, 0), which a
  /// profiled prefill contains and the step pays once), at least 0.
  void add_chunk(step_work& w, double start, double tokens) const noexcept;
  /// One step of `w` plus `decode_batch` sequences of mean `context`. Priced
  /// per sequence: the chunks' costs plus the decode step (or, without
  /// decodes, the fixed part), so k prompts of n tokens in one step cost about
  /// k x prefill_ms(n), not prefill_ms(k x n). Otherwise step_ms(w.prefill_tokens, ...).
  [[nodiscard]] double step_ms(const step_work& w, double decode_batch, double context) const noexcept;

private:
  using polyline = std::vector<std::pair<double, double>>;
  polyline prefill_;                                   ///< isl -> ms, cold prompts
  std::vector<std::pair<double, polyline>> decode_;    ///< context -> (batch -> ms)
  bool per_sequence_ = false;                          ///< prices_prefill_per_sequence
};

/// Prefill time (ms) of a cold prompt of `isl` tokens: linear between the
/// profiled lengths (prefix_hit 0), extrapolated from the last two beyond them
/// and proportionally below the first. nullopt without such points.
[[nodiscard]] std::optional<double> prefill_ms_at(const engine_profile& p, double isl);

/// Decode step time (ms) of `batch` sequences of `context` tokens: linear in
/// batch and in context between profiled points (clamped at the edges).
/// nullopt without decode points.
[[nodiscard]] std::optional<double> decode_step_ms_at(const engine_profile& p, double batch, double context);

/// Latency targets.
struct sla_targets {
  double ttft_ms = 0;
  double itl_ms = 0;
};

/// What one engine sustains under `sla` for requests of `isl` input and `osl`
/// output tokens (Dynamo's planner method, research/dynamo.md 6.2):
///  - prefill: isl / prefill time, tokens per second of one busy engine;
///  - decode: the largest profiled-or-interpolated batch (<= max_num_seqs,
///    within the KV cache at context isl + osl / 2) whose step time meets the
///    ITL target; its throughput batch / step time.
struct sla_estimate {
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
  double prefill_ms = 0;      ///< of one prompt, unqueued
  uint32_t decode_batch = 0;  ///< 0: not even batch 1 meets the ITL target
  bool meets_ttft = false;    ///< prefill_ms <= ttft: the target is reachable by scaling
  bool meets_itl = false;
};
[[nodiscard]] std::optional<sla_estimate> estimate_sla(const engine_profile& p, const sla_targets& sla,
                                                       double isl, double osl);

/// The profile as JSON (the file dynamo-profile writes) and back.
[[nodiscard]] nlohmann::json to_json(const engine_profile& p);
[[nodiscard]] expected<engine_profile> profile_from_json(const nlohmann::json& j);
/// Reads a profile file. errc::io_error (unreadable) or invalid_argument (not a profile).
[[nodiscard]] expected<engine_profile> load_profile(const std::string& path);

} // namespace dynamo::plan
