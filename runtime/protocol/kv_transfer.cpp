#include "runtime/protocol/kv_transfer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

namespace dynamo::protocol {

std::string_view to_string(kv_dtype d) noexcept {
  switch (d) {
    case kv_dtype::f32:
      return "f32";
    case kv_dtype::f16:
      return "f16";
    case kv_dtype::bf16:
      return "bf16";
  }
  return "unknown";
}

uint32_t dtype_bytes(kv_dtype d) noexcept {
  switch (d) {
    case kv_dtype::f32:
      return 4;
    case kv_dtype::f16:
    case kv_dtype::bf16:
      return 2;
  }
  return 0;
}

namespace {

// Product of the dimensions in bytes, or nullopt on overflow / unknown dtype.
std::optional<uint64_t> block_bytes(const kv_layout& l) {
  uint64_t factors[] = {l.num_layers, 2, l.block_size, l.num_kv_heads, l.head_dim,
                        dtype_bytes(l.dtype)};
  uint64_t total = 1;
  for (uint64_t f : factors) {
    if (f == 0)
      return std::nullopt;
    if (total > std::numeric_limits<uint64_t>::max() / f)
      return std::nullopt;
    total *= f;
  }
  return total;
}

caf::error invalid(std::string what) {
  return make_error(errc::invalid_argument, std::move(what));
}

} // namespace

kv_layout make_block_major_layout(uint32_t num_layers, uint32_t block_size, uint32_t num_kv_heads,
                                  uint32_t head_dim, kv_dtype dtype) {
  kv_layout l;
  l.num_layers = num_layers;
  l.block_size = block_size;
  l.num_kv_heads = num_kv_heads;
  l.head_dim = head_dim;
  l.dtype = dtype;
  l.bytes_per_block = block_bytes(l).value_or(0);
  return l;
}

kv_layout make_head_major_layout(uint32_t num_layers, uint32_t block_size, uint32_t num_kv_heads,
                                 uint32_t head_dim, kv_dtype dtype) {
  kv_layout l = make_block_major_layout(num_layers, block_size, num_kv_heads, head_dim, dtype);
  l.name = head_major_layout;
  return l;
}

expected<void> validate(const kv_layout& l) {
  if (l.name != block_major_layout && l.name != head_major_layout)
    return invalid(fmt::format("kv layout: unknown layout name '{}'", l.name));
  if (l.num_layers == 0 || l.block_size == 0 || l.num_kv_heads == 0 || l.head_dim == 0)
    return invalid("kv layout: a dimension is zero");
  if (dtype_bytes(l.dtype) == 0)
    return invalid(fmt::format("kv layout: unknown dtype {}", static_cast<int>(l.dtype)));
  auto bytes = block_bytes(l);
  if (!bytes)
    return invalid("kv layout: block size overflows");
  if (*bytes != l.bytes_per_block)
    return invalid(fmt::format("kv layout: bytes_per_block {} but the dimensions give {}",
                               l.bytes_per_block, *bytes));
  return {};
}

expected<void> check_compatible(const kv_layout& local, const kv_layout& remote) {
  if (auto ok = validate(local); !ok)
    return make_error(errc::invalid_argument, "local " + message_of(ok.error()));
  if (auto ok = validate(remote); !ok)
    return make_error(errc::invalid_argument, "remote " + message_of(ok.error()));
  auto differ = [](std::string_view field, auto a, auto b) {
    return invalid(fmt::format("layout mismatch: {} {} != {}", field, a, b));
  };
  if (local.num_layers != remote.num_layers)
    return differ("num_layers", local.num_layers, remote.num_layers);
  if (local.block_size != remote.block_size)
    return differ("block_size", local.block_size, remote.block_size);
  if (local.num_kv_heads != remote.num_kv_heads)
    return differ("num_kv_heads", local.num_kv_heads, remote.num_kv_heads);
  if (local.head_dim != remote.head_dim)
    return differ("head_dim", local.head_dim, remote.head_dim);
  if (local.dtype != remote.dtype)
    return differ("dtype", to_string(local.dtype), to_string(remote.dtype));
  if (local.name != remote.name)
    return differ("name", local.name, remote.name);
  return {}; // bytes_per_block is equal once both validate
}

uint64_t block_major_offset(const kv_layout& l, uint32_t layer, uint32_t kv, uint32_t token,
                            uint32_t head, uint32_t dim) noexcept {
  uint64_t index = (uint64_t{layer} * 2 + kv) * l.block_size + token;
  index = (index * l.num_kv_heads + head) * l.head_dim + dim;
  return index * dtype_bytes(l.dtype);
}

uint64_t head_major_offset(const kv_layout& l, uint32_t layer, uint32_t kv, uint32_t token,
                           uint32_t head, uint32_t dim) noexcept {
  uint64_t index = (uint64_t{layer} * 2 + kv) * l.num_kv_heads + head;
  index = (index * l.block_size + token) * l.head_dim + dim;
  return index * dtype_bytes(l.dtype);
}

std::optional<uint64_t> element_offset(const kv_layout& l, uint32_t layer, uint32_t kv,
                                       uint32_t token, uint32_t head, uint32_t dim) noexcept {
  if (l.name == block_major_layout)
    return block_major_offset(l, layer, kv, token, head, dim);
  if (l.name == head_major_layout)
    return head_major_offset(l, layer, kv, token, head, dim);
  return std::nullopt;
}

namespace {

/// A destination id listed twice, if any. Ids of a KV pool are dense, so a
/// bitmap over [0, max] usually does it in one pass (an unordered_set cost
/// ~90 us for 2,048 ids); sparse ids are sorted instead.
std::optional<uint32_t> repeated_id(const std::vector<uint32_t>& ids) {
  if (ids.size() < 2)
    return std::nullopt;
  const uint64_t words = uint64_t{*std::max_element(ids.begin(), ids.end())} / 64 + 1;
  if (words <= 4 * ids.size()) {
    std::vector<uint64_t> seen(words, 0);
    for (uint32_t id : ids) {
      uint64_t& w = seen[id / 64];
      const uint64_t bit = uint64_t{1} << (id % 64);
      if (w & bit)
        return id;
      w |= bit;
    }
    return std::nullopt;
  }
  std::vector<uint32_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  auto it = std::adjacent_find(sorted.begin(), sorted.end());
  return it == sorted.end() ? std::nullopt : std::optional<uint32_t>{*it};
}

} // namespace

expected<void> validate(const kv_transfer_request& r) {
  if (r.source_block_ids.size() != r.destination_block_ids.size())
    return invalid(fmt::format("kv transfer {}: {} source blocks but {} destination blocks",
                               r.transfer_id, r.source_block_ids.size(),
                               r.destination_block_ids.size()));
  if (r.source_block_ids.size() > max_transfer_blocks)
    return invalid(fmt::format("kv transfer {}: {} blocks is over the limit of {}", r.transfer_id,
                               r.source_block_ids.size(), max_transfer_blocks));
  if (auto id = repeated_id(r.destination_block_ids))
    return invalid(fmt::format("kv transfer {}: destination block {} appears twice",
                               r.transfer_id, *id));
  if (auto ok = validate(r.layout); !ok)
    return ok;
  return {};
}

caf::error status_error(const kv_transfer_status& s) {
  if (s.ok())
    return caf::error{};
  auto code = static_cast<errc>(s.code);
  if (to_string(code) == "unknown")
    code = errc::internal;
  return make_error(code, s.message);
}

kv_transfer_status failed_status(uint64_t transfer_id, uint64_t source_worker_id,
                                 const caf::error& err) {
  kv_transfer_status s;
  s.transfer_id = transfer_id;
  s.source_worker_id = source_worker_id;
  auto code = code_of(err);
  s.code = static_cast<uint8_t>(code == errc{} ? errc::internal : code);
  s.message = message_of(err);
  return s;
}

uint64_t fingerprint(const std::vector<uint8_t>& bytes) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace dynamo::protocol
