// Test helpers for the grammar tests: a byte vocabulary (one token per byte
// plus EOS) to check which texts a grammar accepts, and mask helpers.
// Test code only; single-threaded.
#pragma once

#include "runtime/grammar/matcher.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

namespace dynamo::gram::testing {

inline constexpr uint32_t byte_eos = 256;

/// Tokens 0..255 are single bytes, 256 is EOS.
inline std::shared_ptr<const token_vocab> byte_vocab() {
  static const auto v = [] {
    std::vector<std::string> t(257);
    for (int b = 0; b < 256; ++b) t[size_t(b)] = std::string(1, char(b));
    return *token_vocab::build(std::move(t), {byte_eos});
  }();
  return v;
}

inline std::shared_ptr<const compiled_grammar> compile_bytes(const expected<grammar>& g) {
  BOOST_REQUIRE_MESSAGE(g, (g ? std::string() : describe(g.error())));
  auto c = compiled_grammar::compile(*g, byte_vocab());
  BOOST_REQUIRE_MESSAGE(c, (c ? std::string() : describe(c.error())));
  return *c;
}

/// Whether `text` is a complete sentence of the grammar, fed byte by byte;
/// also checks at each step that the mask allows exactly what accept does.
inline bool accepts(const std::shared_ptr<const compiled_grammar>& g, std::string_view text) {
  matcher m(g);
  std::vector<uint64_t> mask(m.mask_words());
  for (char c : text) {
    m.fill_next_token_bitmask(mask);
    const auto id = static_cast<uint8_t>(c);
    const bool allowed = (mask[id >> 6] >> (id & 63)) & 1;
    const bool ok = static_cast<bool>(m.accept_token(id));
    BOOST_CHECK_EQUAL(allowed, ok);
    if (!ok) return false;
  }
  m.fill_next_token_bitmask(mask);
  BOOST_CHECK_EQUAL(bool((mask[byte_eos >> 6] >> (byte_eos & 63)) & 1), m.can_terminate());
  return m.can_terminate();
}

/// The ids set in `mask`.
inline std::vector<uint32_t> mask_ids(const std::vector<uint64_t>& mask) {
  std::vector<uint32_t> out;
  for (size_t w = 0; w < mask.size(); ++w)
    for (int b = 0; b < 64; ++b)
      if ((mask[w] >> b) & 1) out.push_back(static_cast<uint32_t>(w * 64 + size_t(b)));
  return out;
}

} // namespace dynamo::gram::testing
