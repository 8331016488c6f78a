// Next-token sampling on the GPU, one CTA per logits row, with the semantics
// of model::sampler (runtime/model/sampler.hpp), which is its CPU reference:
//   greedy when temperature <= 0 (or not finite) or top_k == 1: the lowest id
//   among the largest logits; otherwise softmax(logits / T) restricted to the
//   top_k largest (ties: lower id first), then to the smallest most-likely
//   prefix whose mass reaches top_p, and inverse-CDF sampling with
//   u = rng_uniform(seed, position) (kernels/counter_rng.hpp), scanning the
//   candidates in sorted order when filtered and in id order otherwise.
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
};

struct sample_args {
  const float* logits = nullptr;        ///< [n_rows, n_vocab] fp32; row r at logits + r * logits_stride
  size_t logits_stride = 0;
  uint32_t n_rows = 0;
  uint32_t n_vocab = 0;
  const sample_params* params = nullptr; ///< [n_rows] device
  uint32_t* out = nullptr;               ///< [n_rows] device: sampled token ids
};

[[nodiscard]] cudaError_t launch_sample(const sample_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
