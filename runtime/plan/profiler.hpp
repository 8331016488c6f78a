// Measures an engine_profile (runtime/plan/profile.hpp) by sweeping one
// engine_core directly, without planes: prefill per prompt length and prefix
// hit, decode steps per batch and context. Called by apps/dynamo-profile and
// tests. Single-threaded: it owns the engines it makes.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/engine_core.hpp"
#include "runtime/plan/profile.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dynamo::plan {

struct profile_sweep {
  std::vector<uint32_t> isl{128, 256, 512, 1024, 2048, 4096}; ///< prompt lengths (prefill)
  std::vector<double> prefix_hit{0.0, 0.5, 0.9};               ///< share of the prompt already cached
  std::vector<uint32_t> batch{1, 2, 4, 8, 16, 32, 64};        ///< running sequences (decode)
  std::vector<uint32_t> context{128, 512, 2048};               ///< tokens per sequence at decode
  uint32_t decode_steps = 8;  ///< measured decode steps per point (after one unmeasured)
  uint32_t repeats = 1;       ///< measurements per prefill point (the minimum is kept)
  /// Mixed steps (a prefill chunk of these many tokens beside each decode
  /// batch x context point; empty: none): what one step of both costs.
  std::vector<uint32_t> mixed_chunk;
  /// Time steps by the calling thread's CPU time instead of wall time: a
  /// one-thread CPU engine's compute, free of other processes on shared cores.
  bool thread_cpu_clock = false;
  uint32_t mixed_repeats = 3; ///< measured mixed steps per point (the median is kept)
  /// Wall seconds the whole sweep may take (0: no limit). Prefill gets the
  /// first quarter, decode up to three quarters (all the rest without mixed
  /// points), mixed the rest. The first point of each phase is always
  /// measured; a later one is skipped (listed with why) when its cost,
  /// predicted from the dearest token of work measured so far in its phase,
  /// would pass its phase's end. Smaller points after it still run.
  double budget_s = 0;
};

/// The time budget of one sweep phase (profile_sweep::budget_s): predicts a
/// point's seconds from its work (tokens it prefills and decodes) at the
/// highest seconds per work unit measured so far. Pure; times are passed in.
class phase_budget {
public:
  /// `end_s`: seconds since the sweep began by which the phase must be done
  /// (<= 0: no limit).
  explicit phase_budget(double end_s) : end_s_(end_s) {}
  /// Predicted seconds of a point of `work` units (0 before any is measured).
  [[nodiscard]] double predict(double work) const noexcept { return rate_ * work; }
  /// Whether a point of `work` may start at `now_s` (seconds since the sweep
  /// began): always the phase's first (nothing to predict from).
  [[nodiscard]] bool fits(double work, double now_s) const noexcept {
    return end_s_ <= 0 || !measured_ || now_s + predict(work) <= end_s_;
  }
  /// A measured point: `work` units took `seconds`.
  void record(double work, double seconds) noexcept {
    measured_ = true;
    if (work > 0)
      rate_ = std::max(rate_, seconds / work);
  }
  [[nodiscard]] double end_s() const noexcept { return end_s_; }

private:
  double end_s_;
  double rate_ = 0;
  bool measured_ = false;
};

/// Makes a fresh engine for each measurement group (an empty prefix cache).
using engine_maker = std::function<expected<std::unique_ptr<engine::engine_core>>()>;
/// Called with a line per measured point (progress output).
using profile_progress = std::function<void(const std::string&)>;

/// Runs the sweep. Times are the steps' simulated durations when the engine
/// reports them (mocker), else wall time around step(). Points whose prompt
/// does not fit the context or whose batch x context does not fit the KV cache
/// are skipped and listed. Errors: the engine's (creation or a failed step).
[[nodiscard]] expected<engine_profile> run_profile(const engine_maker& make, const profile_sweep& sweep,
                                                   const profile_progress& progress = {});

/// The request sizes of dynamo-profile --handoff's probes
/// (apps/dynamo-profile/handoff_probe): hand-off prompts, sent one at a time,
/// `warmup` + `requests` each to a local and a disaggregated cluster; and
/// batches of concurrent requests for the step overhead.
struct probe_sizes {
  std::vector<uint32_t> isl{256, 1024, 2048, 4096};
  uint32_t requests = 10;
  uint32_t warmup = 2;
  std::vector<uint32_t> batch{1, 16, 64};
  uint32_t batch_isl = 256, batch_osl = 64;
};

/// Seconds of the profiled engine's compute the probes of `s` take (prefill
/// and decode steps by the profile; the clusters' own costs not counted).
[[nodiscard]] double probe_seconds(const engine_profile& p, const probe_sizes& s);

/// `want` scaled to a slow engine: batches above max_num_seqs dropped; then
/// while either half (hand-offs, batches) takes more than budget_s / 2 by
/// probe_seconds: the hand-offs drop their longest prompt (keeping two), then
/// halve every prompt (down to 16 tokens), then measure fewer pairs (down to
/// 3); the batches halve their prompt (down to 32), drop their largest batch
/// (keeping two), halve their output (down to 16). A fast engine (the mocker,
/// CUDA) keeps `want`. budget_s <= 0: only the max_num_seqs rule.
[[nodiscard]] probe_sizes fit_probe(const engine_profile& p, probe_sizes want, double budget_s);

} // namespace dynamo::plan
