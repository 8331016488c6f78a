#include "runtime/mocker/token_stream.hpp"

namespace dynamo::mocker {

uint32_t next_token(uint32_t prev, uint32_t position) noexcept {
  // splitmix64 finaliser over (prev, position): cheap, well mixed, stable.
  uint64_t x = (uint64_t{prev} << 32 | position) + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return first_token + static_cast<uint32_t>(x % (last_token - first_token + 1));
}

std::vector<uint32_t> continuation(std::span<const uint32_t> tokens, uint32_t n) {
  std::vector<uint32_t> out;
  out.reserve(n);
  uint32_t prev = tokens.back();
  auto position = static_cast<uint32_t>(tokens.size());
  for (uint32_t i = 0; i < n; ++i) {
    prev = next_token(prev, position++);
    out.push_back(prev);
  }
  return out;
}

} // namespace dynamo::mocker
