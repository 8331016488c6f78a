#include "runtime/protocol/codec.hpp"

namespace dynamo::protocol {

namespace {
std::atomic<uint64_t> malformed_total{0};
} // namespace

uint64_t malformed_count() noexcept {
  return malformed_total.load(std::memory_order_relaxed);
}

namespace detail {

void count_malformed() noexcept {
  malformed_total.fetch_add(1, std::memory_order_relaxed);
}

expected<msgpack::object_handle> unpack(std::span<const uint8_t> data, const unpack_limits& lim) {
  if (data.empty()) {
    count_malformed();
    return make_error(errc::malformed_message, "empty message");
  }
  msgpack::unpack_limit limit(lim.array, lim.map, lim.str, lim.bin, lim.ext, lim.depth);
  try {
    size_t off = 0;
    auto oh = msgpack::unpack(reinterpret_cast<const char*>(data.data()), data.size(), off,
                              nullptr, nullptr, limit);
    if (off != data.size()) {
      count_malformed();
      return make_error(errc::malformed_message, "trailing bytes after message");
    }
    return oh;
  } catch (const msgpack::size_overflow&) {
    count_malformed();
    return make_error(errc::malformed_message, "size limit exceeded");
  } catch (const msgpack::insufficient_bytes&) {
    count_malformed();
    return make_error(errc::malformed_message, "truncated message");
  } catch (const msgpack::parse_error&) {
    count_malformed();
    return make_error(errc::malformed_message, "parse error");
  } catch (const std::bad_alloc&) {
    count_malformed();
    return make_error(errc::malformed_message, "allocation failed");
  } catch (const std::exception& e) {
    count_malformed();
    return make_error(errc::malformed_message, e.what());
  }
}

} // namespace detail
} // namespace dynamo::protocol
