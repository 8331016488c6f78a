// The paged KV cache in host memory: a fixed pool of blocks, each holding the
// K and V of `block_size` consecutive positions for every layer. The scheduler
// decides which block ids a sequence uses; this class only owns the bytes.
// Layout (one contiguous allocation, row-major):
//
//   [num_blocks][n_layer][2 (K, V)][n_kv_head][block_size][head_dim]
//
// so one block of one sequence is a single contiguous span of block_bytes()
// (what a KV transfer between workers moves). Owned by one executor; not
// thread-safe (the forward pass writes it from its own thread pool).
#pragma once

#include "runtime/model/decoder_config.hpp"

#include "kernels/reference/paged_kv.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace dynamo::model {

using kernels::ref::kv_dtype;

struct kv_cache_shape {
  uint32_t num_blocks = 0;
  uint32_t block_size = 16; ///< tokens per block
  uint32_t n_layer = 0;
  uint32_t n_kv_head = 0;
  uint32_t head_dim = 0;
  kv_dtype dtype = kv_dtype::f16;

  /// Bytes of one block (all layers, K and V).
  [[nodiscard]] size_t block_bytes() const noexcept {
    return size_t(n_layer) * 2 * block_size * n_kv_head * head_dim * kernels::ref::kv_dtype_bytes(dtype);
  }
};

/// The shape for `config`, with as many blocks as fit in `budget_bytes`.
[[nodiscard]] kv_cache_shape kv_shape_for_budget(const decoder_config& config, uint32_t block_size, kv_dtype dtype,
                                                 size_t budget_bytes) noexcept;

class kv_cache {
public:
  /// Reserves the memory (pages are touched only when written). Errors:
  /// invalid_argument for a zero dimension, config_error when allocation fails.
  [[nodiscard]] static expected<std::unique_ptr<kv_cache>> create(const kv_cache_shape& shape);

  [[nodiscard]] const kv_cache_shape& shape() const noexcept { return shape_; }

  /// Layer `layer` as the attention kernels address it.
  [[nodiscard]] kernels::ref::paged_kv_view layer_view(uint32_t layer) noexcept;

  /// The bytes of block `block` (all layers, K and V), for transfers.
  [[nodiscard]] std::span<std::byte> block(uint32_t block) noexcept;

  /// Start of block 0; block b sits at data() + b * shape().block_bytes().
  [[nodiscard]] std::byte* data() noexcept { return mem_.get(); }

private:
  struct free_aligned {
    void operator()(std::byte* p) const noexcept;
  };
  kv_cache(const kv_cache_shape& shape, std::byte* mem) : shape_(shape), mem_(mem) {}

  kv_cache_shape shape_;
  std::unique_ptr<std::byte, free_aligned> mem_;
};

} // namespace dynamo::model
