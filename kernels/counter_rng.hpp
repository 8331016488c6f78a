// The counter-based random stream of sampling, shared verbatim by the CPU
// sampler's contract and the GPU sampling kernel: uniform(seed, position) is
// a pure function (splitmix64's finaliser applied twice), so a seeded request
// draws the same number at a position in any batch, on any device. Plain
// C++ that nvcc also compiles for the device; no state, any thread.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DYNAMO_HOST_DEVICE __host__ __device__
#else
#define DYNAMO_HOST_DEVICE
#endif

namespace dynamo::kernels {

/// splitmix64's finaliser: a bijective 64-bit mix.
DYNAMO_HOST_DEVICE inline uint64_t rng_mix(uint64_t z) noexcept {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The uniform number in [0, 1) of stream `seed` at `position` (53 random bits).
DYNAMO_HOST_DEVICE inline double rng_uniform(uint64_t seed, uint32_t position) noexcept {
  return static_cast<double>(rng_mix(rng_mix(seed) ^ position) >> 11) * (1.0 / 9007199254740992.0);
}

/// The stream seed of a request: its own seed, or the process seed mixed with
/// the sequence id (what model::sampler does for unseeded requests).
DYNAMO_HOST_DEVICE inline uint64_t rng_stream_seed(bool has_seed, uint64_t seed, uint64_t process_seed,
                                                   uint64_t seq_id) noexcept {
  return has_seed ? seed : rng_mix(process_seed ^ rng_mix(seq_id));
}

} // namespace dynamo::kernels
