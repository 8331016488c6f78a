#include "runtime/mocker/token_stream.hpp"

#include <string_view>

#include "kernels/counter_rng.hpp"

namespace dynamo::mocker {

uint64_t stream_of(std::optional<uint64_t> seed, uint32_t choice) noexcept {
  if (seed) return kernels::rng_mix(*seed ^ 0x5eedull) | 1; // never 0, the unseeded stream
  return choice == 0 ? 0 : kernels::rng_mix(choice) | 1;
}

uint32_t next_token(uint32_t prev, uint32_t position, uint64_t stream) noexcept {
  // splitmix64 finaliser over (prev, position) xor the stream: cheap, well
  // mixed, stable; stream 0 is the historical sequence.
  uint64_t x = ((uint64_t{prev} << 32 | position) ^ stream) + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return first_token + static_cast<uint32_t>(x % (last_token - first_token + 1));
}

std::vector<float> embedding(uint32_t last, uint32_t position) {
  std::vector<float> out(embedding_size);
  const uint64_t key = kernels::rng_mix(uint64_t{last} << 32 | position);
  for (uint32_t k = 0; k < embedding_size; ++k) // top 24 bits -> [-1, 1)
    out[k] = static_cast<float>(kernels::rng_mix(key + k) >> 40) / float(1u << 23) - 1.0f;
  return out;
}

protocol::token_logprob prompt_logprob(uint32_t target, uint32_t position, uint32_t k) {
  protocol::token_logprob lp;
  lp.logprob = -0.1f * static_cast<float>(1 + kernels::rng_mix(uint64_t{target} << 32 | position) % 50);
  if (k > 0) lp.top.push_back({target, lp.logprob});
  return lp;
}

std::optional<std::vector<uint32_t>> scripted_reply(std::span<const uint32_t> tokens) {
  static constexpr std::string_view open = "<mock_reply>", close = "</mock_reply>";
  auto matches = [&](size_t at, std::string_view s) {
    if (at + s.size() > tokens.size())
      return false;
    for (size_t k = 0; k < s.size(); ++k)
      if (tokens[at + k] != static_cast<unsigned char>(s[k]))
        return false;
    return true;
  };
  for (size_t i = tokens.size(); i-- > 0;) {
    if (!matches(i, open))
      continue;
    for (size_t j = i + open.size(); j < tokens.size(); ++j)
      if (matches(j, close))
        return std::vector<uint32_t>(tokens.begin() + static_cast<ptrdiff_t>(i + open.size()),
                                     tokens.begin() + static_cast<ptrdiff_t>(j));
    return std::nullopt;
  }
  return std::nullopt;
}

std::vector<uint32_t> continuation(std::span<const uint32_t> tokens, uint32_t n, uint64_t stream) {
  std::vector<uint32_t> out;
  out.reserve(n);
  uint32_t prev = tokens.back();
  auto position = static_cast<uint32_t>(tokens.size());
  for (uint32_t i = 0; i < n; ++i) {
    prev = next_token(prev, position++, stream);
    out.push_back(prev);
  }
  return out;
}

} // namespace dynamo::mocker
