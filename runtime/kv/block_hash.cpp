#include "runtime/kv/block_hash.hpp"

#include <xxhash.h>

#include <array>
#include <bit>
#include <cstring>

static_assert(std::endian::native == std::endian::little,
              "block hashing assumes a little-endian host (token ids hash as LE u32)");

namespace dynamo::kv {

uint64_t local_block_hash(std::span<const uint32_t> tokens) noexcept {
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), block_hash_seed);
}

std::vector<uint64_t> local_block_hashes(std::span<const uint32_t> tokens, uint32_t block_size) {
  std::vector<uint64_t> out;
  if (block_size == 0)
    return out;
  const size_t full = tokens.size() / block_size;
  out.reserve(full);
  for (size_t i = 0; i < full; ++i)
    out.push_back(local_block_hash(tokens.subspan(i * block_size, block_size)));
  return out;
}

uint64_t sequence_hash(uint64_t parent_sequence_hash, uint64_t local_hash) noexcept {
  std::array<uint64_t, 2> buf{parent_sequence_hash, local_hash};
  return XXH3_64bits_withSeed(buf.data(), sizeof(buf), block_hash_seed);
}

std::vector<uint64_t> sequence_hashes(std::span<const uint64_t> local_hashes) {
  std::vector<uint64_t> out;
  out.reserve(local_hashes.size());
  for (size_t i = 0; i < local_hashes.size(); ++i)
    out.push_back(i == 0 ? local_hashes[0] : sequence_hash(out.back(), local_hashes[i]));
  return out;
}

std::vector<uint64_t> sequence_hashes_of_tokens(std::span<const uint32_t> tokens,
                                                uint32_t block_size) {
  auto local = local_block_hashes(tokens, block_size);
  return sequence_hashes(local);
}

} // namespace dynamo::kv
