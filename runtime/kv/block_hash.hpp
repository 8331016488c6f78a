// Block hashing exactly as Dynamo's router computes it (research/dynamo.md 3.1):
// XXH3-64 with seed 1337 over the little-endian u32 token ids of each *full*
// block ("local" hash), chained into sequence hashes
// seq[0] = local[0], seq[i] = XXH3_64(LE(seq[i-1]) || LE(local[i]), 1337).
// Engine, mocker and router all call these, so their hashes agree. Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::kv {

inline constexpr uint64_t block_hash_seed = 1337;

/// Hash of one block's tokens (any length; callers pass full blocks).
[[nodiscard]] uint64_t local_block_hash(std::span<const uint32_t> tokens) noexcept;

/// Local hashes of every full block of `tokens`; a partial tail is ignored.
/// REQUIRES: block_size > 0.
[[nodiscard]] std::vector<uint64_t> local_block_hashes(std::span<const uint32_t> tokens,
                                                       uint32_t block_size);

/// Chains one block onto its parent's sequence hash.
[[nodiscard]] uint64_t sequence_hash(uint64_t parent_sequence_hash, uint64_t local_hash) noexcept;

/// Sequence hashes for a run of local hashes starting at the root.
[[nodiscard]] std::vector<uint64_t> sequence_hashes(std::span<const uint64_t> local_hashes);

/// Convenience: sequence hashes of every full block of `tokens`.
[[nodiscard]] std::vector<uint64_t> sequence_hashes_of_tokens(std::span<const uint32_t> tokens,
                                                              uint32_t block_size);

} // namespace dynamo::kv
