#include "runtime/kv/token_blocks.hpp"

#include "runtime/kv/block_hash.hpp"

#include <utility>

namespace dynamo::kv {

token_blocks::token_blocks(uint32_t block_size, std::vector<uint32_t> tokens)
    : block_size_(block_size), tokens_(std::move(tokens)) {
  hash_new_full_blocks();
}

void token_blocks::append(uint32_t token) {
  tokens_.push_back(token);
  if (tokens_.size() % block_size_ == 0)
    hash_new_full_blocks();
}

void token_blocks::hash_new_full_blocks() {
  const size_t full = tokens_.size() / block_size_;
  const std::span<const uint32_t> all{tokens_};
  for (size_t i = sequence_hashes_.size(); i < full; ++i) {
    const uint64_t local = local_block_hash(all.subspan(i * block_size_, block_size_));
    local_hashes_.push_back(local);
    sequence_hashes_.push_back(i == 0 ? local : sequence_hash(sequence_hashes_.back(), local));
  }
}

} // namespace dynamo::kv
