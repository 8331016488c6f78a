#include "runtime/model/kv_cache.hpp"

#include <algorithm>
#include <new>

namespace dynamo::model {
namespace {
constexpr std::align_val_t cache_alignment{64};
}

kv_cache_shape kv_shape_for_budget(const decoder_config& c, uint32_t block_size, kv_dtype dtype,
                                   size_t budget_bytes) noexcept {
  kv_cache_shape s{0, block_size, c.n_layer, c.n_kv_head, c.head_dim, dtype};
  const size_t per_block = s.block_bytes();
  s.num_blocks = per_block == 0 ? 0 : static_cast<uint32_t>(std::min<size_t>(budget_bytes / per_block, UINT32_MAX));
  return s;
}

void kv_cache::free_aligned::operator()(std::byte* p) const noexcept { ::operator delete(p, cache_alignment); }

expected<std::unique_ptr<kv_cache>> kv_cache::create(const kv_cache_shape& s) {
  if (s.num_blocks == 0 || s.block_size == 0 || s.n_layer == 0 || s.n_kv_head == 0 || s.head_dim == 0) {
    return make_error(errc::invalid_argument, "kv_cache: every dimension must be positive (num_blocks " +
                                                  std::to_string(s.num_blocks) + ", block_size " +
                                                  std::to_string(s.block_size) + ")");
  }
  const size_t bytes = s.block_bytes() * s.num_blocks;
  auto* mem = static_cast<std::byte*>(::operator new(bytes, cache_alignment, std::nothrow));
  if (mem == nullptr) {
    return make_error(errc::config_error, "kv_cache: cannot allocate " + std::to_string(bytes) +
                                               " bytes (lower the KV cache budget)");
  }
  return std::unique_ptr<kv_cache>(new kv_cache(s, mem));
}

kernels::ref::paged_kv_view kv_cache::layer_view(uint32_t layer) noexcept {
  const size_t esz = kernels::ref::kv_dtype_bytes(shape_.dtype);
  const size_t per_kv = size_t(shape_.block_size) * shape_.n_kv_head * shape_.head_dim; // elements
  std::byte* k = mem_.get() + size_t(layer) * 2 * per_kv * esz;
  kernels::ref::paged_kv_view v;
  v.k = k;
  v.v = k + per_kv * esz;
  v.dtype = shape_.dtype;
  v.block_stride = per_kv * 2 * shape_.n_layer;
  v.block_size = shape_.block_size;
  v.n_kv_head = shape_.n_kv_head;
  v.head_dim = shape_.head_dim;
  return v;
}

std::span<std::byte> kv_cache::block(uint32_t b) noexcept {
  const size_t bb = shape_.block_bytes();
  return {mem_.get() + size_t(b) * bb, bb};
}

} // namespace dynamo::model
