// How many KV blocks hold a number of tokens: the one rounding-up division of
// tokens by the block size, shared by the scheduler, the KV cache manager, the
// router, disaggregation, the forward pass, the configurator and the
// benchmarks. Header-only, pure: any thread.
#pragma once

#include <cstdint>

namespace dynamo::kv {

/// Blocks of `block_size` tokens needed to hold `tokens` (a partial last block
/// counts). REQUIRES: block_size > 0.
[[nodiscard]] constexpr uint64_t blocks_for_tokens(uint64_t tokens, uint64_t block_size) noexcept {
  return (tokens + block_size - 1) / block_size;
}

} // namespace dynamo::kv
