// The sparse logits processing of sampling, shared verbatim by the CPU sampler
// (runtime/model/sampler) and the CUDA kernel (kernels/logits_process.cu): a
// row's edits name each token that logit_bias, min_tokens or a penalty
// touches, and apply_logit_edit() is the one formula both run, with rounding
// pinned (no FMA contraction on the device) so both give the same floats.
// Plain C++ that nvcc also compiles for the device; no state, any thread.
#pragma once

#include "kernels/counter_rng.hpp" // DYNAMO_HOST_DEVICE

#include <cmath>
#include <cstdint>

namespace dynamo::kernels {

inline constexpr uint32_t logit_seen = 1u;       ///< in the prompt or generated: repetition penalty
inline constexpr uint32_t logit_suppressed = 2u; ///< masked out (a stop token before min_tokens)

/// What to do to one token's logit. Edits of a row name distinct tokens.
struct logit_edit {
  uint32_t token = 0;
  float bias = 0.0f;  ///< logit_bias
  uint32_t count = 0; ///< times generated so far: frequency and presence penalties
  uint32_t flags = 0; ///< logit_seen | logit_suppressed
};

/// The penalties of one row (sampling_options' values).
struct logit_penalties {
  float presence = 0.0f;
  float frequency = 0.0f;
  float repetition = 1.0f;
};

namespace detail {
#if defined(__CUDA_ARCH__)
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
#else
inline float mul_rn(float a, float b) { return a * b; }
inline float div_rn(float a, float b) { return a / b; }
inline float add_rn(float a, float b) { return a + b; }
#endif
} // namespace detail

/// vLLM's order: bias, the min_tokens mask, repetition (divide a positive
/// logit, multiply a non-positive one), then frequency x count + presence.
DYNAMO_HOST_DEVICE inline float apply_logit_edit(float logit, const logit_edit& e, const logit_penalties& p) {
  if (e.flags & logit_suppressed) return -INFINITY;
  float l = detail::add_rn(logit, e.bias);
  if ((e.flags & logit_seen) && p.repetition != 1.0f) {
    l = l > 0.0f ? detail::div_rn(l, p.repetition) : detail::mul_rn(l, p.repetition);
  }
  if (e.count > 0) {
    const float penalty = detail::add_rn(detail::mul_rn(p.frequency, static_cast<float>(e.count)), p.presence);
    l = detail::add_rn(l, -penalty);
  }
  return l;
}

} // namespace dynamo::kernels
