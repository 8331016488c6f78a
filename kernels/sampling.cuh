// Next-token sampling on the GPU, one CTA per draw, with the semantics of
// model::sampler (runtime/model/sampler.hpp), which is its CPU reference; the
// logits were processed before (kernels/logits_process.cuh):
//   greedy when temperature <= 0 (or not finite) or top_k == 1: the lowest id
//   among the largest logits; otherwise softmax(logits / T) restricted to the
//   tokens at least min_p times as likely as the top one and to the top_k
//   largest (ties: lower id first), then to the smallest most-likely prefix
//   whose mass reaches top_p, and inverse-CDF sampling with
//   u = rng_uniform(seed, position) (kernels/counter_rng.hpp), scanning the
//   candidates in sorted order when any of the three truncates and in id
//   order otherwise. Several draws may read one row (the n choices of a
//   prompt). Logprobs, when asked: the log-softmax (double) of the row / T
//   (T = 1 when greedy) for the drawn token and the num_logprobs largest.
// No sort: the k-th key, the top-p cut and the sampled token are found by
// radix selection over 64-bit keys (logit bits, then id), with probability
// mass summed in 2^-40 fixed point so results are exact and independent of
// thread scheduling. The draw depends only on (seed, position) and the
// row's logits, never on the batch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

/// Sampling parameters of one row, packed on the host.
struct sample_params {
  uint64_t seed = 0;         ///< stream seed: kernels::rng_stream_seed(...)
  uint32_t position = 0;     ///< batch_entry::sample_position
  float temperature = 1.0f;  ///< <= 0 or not finite: greedy
  float top_p = 1.0f;        ///< clamped to [0, 1]; not finite: off
  int32_t top_k = 0;         ///< <= 0 or >= n_vocab: off
  uint32_t row = 0;          ///< the logits row this draw reads
  float min_p = 0.0f;        ///< clamped to [0, 1]; not finite: off
  int32_t num_logprobs = -1; ///< < 0: no logprobs; else alternatives (<= max_logprobs)
  uint32_t pad = 0;
};

inline constexpr uint32_t max_logprobs = 20;

/// The logprobs of one draw.
struct sample_logprobs {
  float logprob = 0.0f;              ///< of the drawn token
  uint32_t n_top = 0;
  uint32_t top_ids[max_logprobs] = {};
  float top_logprobs[max_logprobs] = {}; ///< most likely first (ties: lower id)
};

struct sample_args {
  const float* logits = nullptr;        ///< fp32 rows; row r at logits + r * logits_stride
  size_t logits_stride = 0;
  uint32_t n_rows = 0;                   ///< draws
  uint32_t n_vocab = 0;
  const sample_params* params = nullptr; ///< [n_rows] device
  uint32_t* out = nullptr;               ///< [n_rows] device: sampled token ids
  sample_logprobs* logprobs = nullptr;   ///< [n_rows] device, for draws with num_logprobs >= 0; may be null
};

[[nodiscard]] cudaError_t launch_sample(const sample_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
