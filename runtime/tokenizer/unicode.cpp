#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <vector>

namespace dynamo::tok {

namespace {

char_info lookup(char32_t cp) noexcept {
  const auto* runs = detail::category_runs;
  const auto* end = runs + detail::category_runs_count;
  const auto* it =
      std::upper_bound(runs, end, cp, [](char32_t c, const detail::category_run& r) { return c < r.first; });
  char_info info{(it - 1)->cat, false};
  const auto* ws = detail::whitespace_ranges;
  const auto* ws_end = ws + detail::whitespace_ranges_count;
  const auto* w = std::upper_bound(ws, ws_end, cp, [](char32_t c, const detail::code_range& r) { return c < r.first; });
  info.space = w != ws && cp <= (w - 1)->last;
  return info;
}

// The Basic Multilingual Plane answered from a table (64 KiB, built once):
// the category in the low bits, whitespace in bit 4.
constexpr uint8_t space_bit = 0x10;
const std::vector<uint8_t> bmp = [] {
  std::vector<uint8_t> t(0x10000);
  for (char32_t c = 0; c < 0x10000; ++c) {
    const char_info i = lookup(c);
    t[c] = static_cast<uint8_t>(static_cast<uint8_t>(i.cat) | (i.space ? space_bit : 0));
  }
  return t;
}();

} // namespace

char_info char_info_of(char32_t cp) noexcept {
  if (cp < 0x10000) {
    const uint8_t b = bmp[cp];
    return {static_cast<unicode_category>(b & 0x0F), (b & space_bit) != 0};
  }
  if (cp > 0x10FFFF)
    return {unicode_category::symbol, false};
  return lookup(cp);
}

char_class classify(char32_t cp) noexcept {
  if (cp > 0x10FFFF)
    return char_class::other;
  const char_info i = char_info_of(cp);
  if (i.space)
    return char_class::whitespace;
  if (i.letter())
    return char_class::letter;
  if (i.number())
    return char_class::number;
  return char_class::other;
}

utf8_char decode_utf8(std::string_view s, size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80)
    return {b0, 1};
  uint32_t len = 0;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return {invalid_cp, 1};
  }
  if (i + len > s.size())
    return {invalid_cp, 1};
  for (uint32_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80)
      return {invalid_cp, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  // Reject overlongs, surrogates and code points past U+10FFFF.
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return {invalid_cp, 1};
  return {cp, len};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

} // namespace dynamo::tok
