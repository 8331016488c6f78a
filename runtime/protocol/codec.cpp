#include "runtime/protocol/codec.hpp"

namespace dynamo::protocol {

namespace {
std::atomic<uint64_t> malformed_total{0};
} // namespace

uint64_t malformed_count() noexcept {
  return malformed_total.load(std::memory_order_relaxed);
}

namespace detail {
namespace {

// A first pass over the bytes with msgpack-c's allocation-free parser. Every
// msgpack object takes at least one byte, so a message of n bytes holds fewer
// than n objects in all its arrays and maps together; msgpack::unpack, though,
// allocates an array's or map's slots when it reads the header (24 or 48 bytes
// a slot), so a few hundred bytes of headers that each declare ~10^6 elements
// made it allocate tens of MB before it found the bytes missing (fuzz_protocol,
// 2026-11-29: 461 bytes, ~200 ms under ASan; docs/FUZZING.md Findings). The
// budget counts declared slots against the bytes present; the depth check keeps
// this pass's own stack as small as unpack's.
struct slot_budget : msgpack::null_visitor {
  slot_budget(size_t bytes, size_t max_depth) : left(bytes), depth_left(max_depth) {}
  bool start_array(uint32_t n) { return open(n); }
  bool end_array() { return close(); }
  bool start_map(uint32_t n) { return open(uint64_t{n} * 2); }
  bool end_map() { return close(); }

  bool open(uint64_t slots) {
    if (slots > left) {
      over = true;
      return false;
    }
    if (depth_left == 0)
      return false; // unpack reports the depth itself
    left -= slots;
    --depth_left;
    return true;
  }
  bool close() {
    ++depth_left;
    return true;
  }

  uint64_t left;
  size_t depth_left;
  bool over = false;
};

} // namespace

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
    slot_budget budget(data.size(), lim.depth);
    size_t scan = 0;
    (void)msgpack::parse(reinterpret_cast<const char*>(data.data()), data.size(), scan, budget);
    if (budget.over) {
      count_malformed();
      return make_error(errc::malformed_message, "arrays and maps declare more elements than the message has bytes");
    }
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
