// How long a step would take on a real GPU, as Dynamo's mocker models it
// (research/dynamo.md 7, polynomial model, in ms): prefill time grows with the
// step's new prompt tokens, decode time with KV cache usage. Used by
// mock_executor. Pure functions; safe from any thread.
#pragma once

#include "runtime/engine/executor.hpp"

#include <chrono>
#include <cstdint>

namespace dynamo::mocker {

struct timing_config {
  double speedup_ratio = 1.0;        ///< divides all time; 0 means no delay at all
  double decode_speedup_ratio = 1.0; ///< further divides decode time; > 0
};

/// 4.209989e-7·T² + 1.518344e-2·T + 16.50142 for T > 0 new prefill tokens; 0 for T = 0.
[[nodiscard]] double prefill_ms(uint64_t new_tokens) noexcept;

/// −25.74·u² + 54.01·u + 5.74 for KV usage u in [0, 1] (clamped), at least 1 ms.
[[nodiscard]] double decode_ms(double kv_usage) noexcept;

/// Simulated duration of `b` on a cache of geometry `g`:
///   prefill_ms(T) / speedup + decode_ms(u) / (speedup · decode_speedup)
/// where T counts the tokens of prefill entries (more than one token, or no
/// sampling) and u = blocks referenced by the batch's block tables × block
/// size / cache tokens; the decode term applies when any entry samples.
[[nodiscard]] std::chrono::microseconds step_time(const engine::batch& b, const engine::kv_geometry& g,
                                                  const timing_config& t) noexcept;

} // namespace dynamo::mocker
