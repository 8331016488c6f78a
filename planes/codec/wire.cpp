#include "planes/codec/wire.hpp"

#include <chrono>

namespace dynamo::planes {

void put_u64_be(uint8_t* out, uint64_t v) noexcept {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(v & 0xffu);
    v >>= 8;
  }
}

uint64_t get_u64_be(const uint8_t* in) noexcept {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = (v << 8) | in[i];
  return v;
}

void append_u64_be(bytes& out, uint64_t v) {
  auto pos = out.size();
  out.resize(pos + 8);
  put_u64_be(out.data() + pos, v);
}

bytes to_bytes(std::span<const uint8_t> data) {
  return bytes(data.begin(), data.end());
}

int64_t wall_clock_ms() noexcept {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

} // namespace dynamo::planes
