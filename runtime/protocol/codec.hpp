// msgpack encode/decode for every wire type in runtime/protocol. Decoding never
// trusts its input: bounded unpack limits, and malformed bytes come back as
// errc::malformed_message (never an exception, crash or huge allocation).
// Pure functions; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <msgpack.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dynamo::protocol {

using bytes = std::vector<uint8_t>;

/// Limits applied to every unpack. Generous for real traffic (a 1M-token prompt
/// fits), small enough that a hostile length prefix cannot allocate gigabytes.
struct unpack_limits {
  size_t array = 4u << 20; ///< elements in one array
  size_t map = 4096;       ///< entries in one map
  size_t str = 16u << 20;  ///< bytes in one string
  size_t bin = 256u << 20; ///< bytes in one bin blob
  size_t ext = 1u << 20;   ///< bytes in one ext
  size_t depth = 32;       ///< nesting depth
};

/// Count of decode failures in this process (exported as a metric).
[[nodiscard]] uint64_t malformed_count() noexcept;

namespace detail {
void count_malformed() noexcept;
[[nodiscard]] expected<msgpack::object_handle> unpack(std::span<const uint8_t> data,
                                                      const unpack_limits& lim);
} // namespace detail

/// Packs any msgpack-adaptable value.
template <class T>
[[nodiscard]] bytes encode(const T& value) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, value);
  auto* p = reinterpret_cast<const uint8_t*>(buf.data());
  return bytes(p, p + buf.size());
}

/// Unpacks `data` into a T; any failure is errc::malformed_message with a reason.
template <class T>
[[nodiscard]] expected<T> decode(std::span<const uint8_t> data, const unpack_limits& lim = {}) {
  auto oh = detail::unpack(data, lim);
  if (!oh)
    return std::move(oh.error());
  try {
    T out{};
    oh->get().convert(out);
    return out;
  } catch (const std::exception& e) {
    detail::count_malformed();
    return make_error(errc::malformed_message, std::string{"wrong shape: "} + e.what());
  }
}

} // namespace dynamo::protocol
