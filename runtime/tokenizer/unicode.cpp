#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <array>

namespace dynamo::tok {

namespace {

bool in_ranges(char32_t cp, const detail::code_range* r, size_t n) noexcept {
  const auto* end = r + n;
  const auto* it = std::upper_bound(r, end, cp, [](char32_t c, const detail::code_range& x) { return c < x.first; });
  return it != r && cp <= (it - 1)->last;
}

char_class classify_slow(char32_t cp) noexcept {
  if (in_ranges(cp, detail::letter_ranges, detail::letter_ranges_count))
    return char_class::letter;
  if (in_ranges(cp, detail::number_ranges, detail::number_ranges_count))
    return char_class::number;
  if (in_ranges(cp, detail::whitespace_ranges, detail::whitespace_ranges_count))
    return char_class::whitespace;
  return char_class::other;
}

// Latin-1 is most of real text: answer it from a table.
const std::array<char_class, 256> latin1 = [] {
  std::array<char_class, 256> t{};
  for (char32_t c = 0; c < 256; ++c)
    t[c] = classify_slow(c);
  return t;
}();

} // namespace

char_class classify(char32_t cp) noexcept {
  if (cp < 256)
    return latin1[cp];
  if (cp > 0x10FFFF)
    return char_class::other;
  return classify_slow(cp);
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
