// The tokens of one sequence together with the hashes of its full blocks,
// kept up to date as tokens are appended (each block is hashed once).
// Owned by the scheduler's per-request state; read by kv_cache_manager.
// A plain value: not thread-safe, cheap to move.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::kv {

class token_blocks {
public:
  /// REQUIRES: block_size > 0.
  token_blocks(uint32_t block_size, std::vector<uint32_t> tokens);

  void append(uint32_t token);

  [[nodiscard]] uint32_t block_size() const noexcept { return block_size_; }
  [[nodiscard]] uint32_t size() const noexcept { return static_cast<uint32_t>(tokens_.size()); }
  [[nodiscard]] std::span<const uint32_t> tokens() const noexcept { return tokens_; }
  [[nodiscard]] uint32_t back() const noexcept { return tokens_.back(); }

  /// Number of full blocks (a partial tail block is not counted).
  [[nodiscard]] uint32_t num_full_blocks() const noexcept {
    return static_cast<uint32_t>(sequence_hashes_.size());
  }
  /// Sequence hashes of the full blocks, root first (kv::sequence_hash chain).
  [[nodiscard]] std::span<const uint64_t> sequence_hashes() const noexcept { return sequence_hashes_; }
  /// Local (tokens) hashes of the full blocks, aligned with sequence_hashes().
  [[nodiscard]] std::span<const uint64_t> local_hashes() const noexcept { return local_hashes_; }

private:
  void hash_new_full_blocks();

  uint32_t block_size_;
  std::vector<uint32_t> tokens_;
  std::vector<uint64_t> local_hashes_;
  std::vector<uint64_t> sequence_hashes_;
};

} // namespace dynamo::kv
