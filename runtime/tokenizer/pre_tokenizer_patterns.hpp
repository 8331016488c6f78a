// The hand-written regex matchers behind pre_tokenize (pre_tokenizer.cpp):
// one function per alternation llama.cpp's BPE pre-tokenizers use. Internal to
// the tokenizer library. Pure functions; safe from any thread.
#pragma once

#include "runtime/tokenizer/unicode.hpp"

#include <cstddef>
#include <string_view>
#include <vector>

namespace dynamo::tok::detail {

/// The text decoded once: code point, category and byte offset per character.
struct text_chars {
  std::vector<char32_t> cp;
  std::vector<char_info> info;
  std::vector<size_t> at; ///< byte offset; at[size()] == text size

  explicit text_chars(std::string_view text);
  [[nodiscard]] size_t size() const noexcept { return cp.size(); }
};

/// A matcher gives the length (in characters) of its pattern's match at
/// character i, or 0 when it does not match there. Lookahead stops at `end`,
/// so each piece of an earlier split is matched as if it were the whole text.
using matcher = size_t (*)(const text_chars& c, size_t i, size_t end);

size_t match_gpt2(const text_chars& c, size_t i, size_t end);
size_t match_llama3(const text_chars& c, size_t i, size_t end);  ///< \p{N}{1,3}
size_t match_qwen2(const text_chars& c, size_t i, size_t end);   ///< \p{N}
size_t match_qwen35(const text_chars& c, size_t i, size_t end);  ///< [\p{L}\p{M}]+ words
size_t match_deepseek3(const text_chars& c, size_t i, size_t end);
size_t match_tekken(const text_chars& c, size_t i, size_t end);
size_t match_gpt4o(const text_chars& c, size_t i, size_t end);
size_t match_bloom(const text_chars& c, size_t i, size_t end);

size_t match_number(const text_chars& c, size_t i, size_t end);      ///< \p{N}
size_t match_numbers(const text_chars& c, size_t i, size_t end);     ///< \p{N}+
size_t match_numbers_3(const text_chars& c, size_t i, size_t end);   ///< \p{N}{1,3}
size_t match_ascii_digits_3(const text_chars& c, size_t i, size_t end); ///< [0-9][0-9][0-9]
size_t match_punct_default(const text_chars& c, size_t i, size_t end);  ///< [\p{P}\$\+<=>\^~\|]+
size_t match_punct_falcon(const text_chars& c, size_t i, size_t end);   ///< [\p{P}\$\+<=>\^~\|`]+
size_t match_newline(const text_chars& c, size_t i, size_t end);        ///< [\r\n]
size_t match_space_letters(const text_chars& c, size_t i, size_t end);  ///< \s?\p{L}+
size_t match_space_punct(const text_chars& c, size_t i, size_t end);    ///< \s?\p{P}+
size_t match_deepseek_llm_letters(const text_chars& c, size_t i, size_t end); ///< \s?[A-Za-zµÀ-Ö...]+
size_t match_deepseek_llm_punct(const text_chars& c, size_t i, size_t end);   ///< \s?[!-/:-~！-／...]+
size_t match_cjk_hangul(const text_chars& c, size_t i, size_t end);     ///< [一-龥ࠀ-一가-퟿]+
size_t match_cjk_kana(const text_chars& c, size_t i, size_t end);       ///< [一-龥぀-ゟ゠-ヿ]+

/// \s+$: the whitespace run that ends the range, if any (found from the end,
/// so long runs elsewhere cost nothing).
[[nodiscard]] size_t trailing_whitespace(const text_chars& c, size_t begin, size_t end);

} // namespace dynamo::tok::detail
