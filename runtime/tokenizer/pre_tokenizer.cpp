#include "runtime/tokenizer/pre_tokenizer.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <array>

namespace dynamo::tok {

namespace {

// The text decoded once: code point, class and byte offset per character.
// `end` bounds every lookahead, so a sub-range is matched as if it were the
// whole text (SmolLM runs the GPT-2 pattern separately between digits).
struct chars {
  std::vector<char32_t> cp;
  std::vector<char_class> cls;
  std::vector<size_t> at; ///< byte offset; at[n] == text size
  size_t end = 0;

  explicit chars(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
      auto c = decode_utf8(text, i);
      cp.push_back(c.cp);
      cls.push_back(classify(c.cp));
      at.push_back(i);
      i += c.len;
    }
    at.push_back(text.size());
    end = cp.size();
  }
  [[nodiscard]] size_t size() const noexcept { return cp.size(); }
};

bool is_l(const chars& c, size_t i) { return i < c.end && c.cls[i] == char_class::letter; }
bool is_n(const chars& c, size_t i) { return i < c.end && c.cls[i] == char_class::number; }
bool is_s(const chars& c, size_t i) { return i < c.end && c.cls[i] == char_class::whitespace; }
bool is_other(const chars& c, size_t i) { return i < c.end && c.cls[i] == char_class::other; }
bool is_crlf(const chars& c, size_t i) { return i < c.end && (c.cp[i] == '\r' || c.cp[i] == '\n'); }

char32_t lower_ascii(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's 't 're 've 'm 'll 'd at i: length in characters, 0 if none.
size_t contraction(const chars& c, size_t i, bool ignore_case) {
  if (c.cp[i] != '\'' || i + 1 >= c.end)
    return 0;
  auto at = [&](size_t k) { return ignore_case ? lower_ascii(c.cp[k]) : c.cp[k]; };
  const char32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  if (i + 2 < c.end) {
    const char32_t b = at(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
      return 3;
  }
  return 0;
}

// \s+(?!\S) then \s+ : a whitespace run, leaving its last character to the
// next piece when a non-space follows (unless the run is one character).
size_t whitespace_run(const chars& c, size_t i) {
  size_t j = i;
  while (is_s(c, j))
    ++j;
  if (j == i)
    return 0;
  if (j < c.end && j - i > 1)
    return j - 1 - i;
  return j - i;
}

// One GPT-2 pattern match starting at i (in characters; always >= 1).
size_t match_gpt2(const chars& c, size_t i) {
  if (size_t n = contraction(c, i, false))
    return n;
  const size_t sp = c.cp[i] == ' ' ? 1 : 0;
  size_t j = i + sp;
  if (is_l(c, j)) {
    while (is_l(c, j))
      ++j;
    return j - i;
  }
  if (is_n(c, j)) {
    while (is_n(c, j))
      ++j;
    return j - i;
  }
  if (is_other(c, j)) {
    while (is_other(c, j))
      ++j;
    return j - i;
  }
  if (size_t n = whitespace_run(c, i))
    return n;
  return 1; // unreachable: every character is L, N, \s or other
}

// One Llama-3 / Qwen2 pattern match starting at i (in characters; always >= 1).
size_t match_llama3(const chars& c, size_t i, size_t max_digits) {
  if (size_t n = contraction(c, i, true))
    return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!is_crlf(c, i) && !is_l(c, i) && !is_n(c, i) && is_l(c, i + 1)) {
    size_t j = i + 1;
    while (is_l(c, j))
      ++j;
    return j - i;
  }
  if (is_l(c, i)) {
    size_t j = i;
    while (is_l(c, j))
      ++j;
    return j - i;
  }
  // \p{N}{1,max}
  if (is_n(c, i)) {
    size_t j = i;
    while (is_n(c, j) && j - i < max_digits)
      ++j;
    return j - i;
  }
  // ' '?[^\s\p{L}\p{N}]+[\r\n]*
  const size_t sp = c.cp[i] == ' ' ? 1 : 0;
  if (is_other(c, i + sp)) {
    size_t j = i + sp;
    while (is_other(c, j))
      ++j;
    while (is_crlf(c, j))
      ++j;
    return j - i;
  }
  // \s*[\r\n]+ : up to the last \r or \n of the whitespace run.
  size_t j = i, last_nl = 0;
  bool any_nl = false;
  for (; is_s(c, j); ++j) {
    if (is_crlf(c, j)) {
      last_nl = j;
      any_nl = true;
    }
  }
  if (any_nl)
    return last_nl + 1 - i;
  if (size_t n = whitespace_run(c, i))
    return n;
  return 1;
}

template <class Match>
void split(chars& c, size_t from, size_t to, std::string_view text, std::vector<std::string_view>& out,
           Match match) {
  c.end = to;
  for (size_t i = from; i < to;) {
    const size_t n = match(i);
    out.push_back(text.substr(c.at[i], c.at[i + n] - c.at[i]));
    i += n;
  }
}

} // namespace

std::optional<pre_tokenizer> pre_tokenizer_from_name(std::string_view name) noexcept {
  if (name == "gpt-2" || name == "gpt2")
    return pre_tokenizer::gpt2;
  if (name == "smollm" || name == "starcoder" || name == "refact" || name == "codeshell")
    return pre_tokenizer::smollm;
  if (name == "llama-bpe" || name == "llama3" || name == "llama-v3")
    return pre_tokenizer::llama3;
  if (name == "qwen2")
    return pre_tokenizer::qwen2;
  return std::nullopt;
}

std::vector<std::string_view> pre_tokenize(pre_tokenizer kind, std::string_view text) {
  std::vector<std::string_view> out;
  if (text.empty())
    return out;
  chars c(text);
  switch (kind) {
    case pre_tokenizer::gpt2:
      split(c, 0, c.size(), text, out, [&](size_t i) { return match_gpt2(c, i); });
      break;
    case pre_tokenizer::smollm: {
      // Digits are isolated first; the GPT-2 pattern then runs on each stretch between them.
      size_t start = 0;
      for (size_t i = 0; i <= c.size(); ++i) {
        if (i < c.size() && c.cls[i] != char_class::number)
          continue;
        split(c, start, i, text, out, [&](size_t k) { return match_gpt2(c, k); });
        if (i < c.size())
          out.push_back(text.substr(c.at[i], c.at[i + 1] - c.at[i]));
        start = i + 1;
      }
      break;
    }
    case pre_tokenizer::llama3:
      split(c, 0, c.size(), text, out, [&](size_t i) { return match_llama3(c, i, 3); });
      break;
    case pre_tokenizer::qwen2:
      split(c, 0, c.size(), text, out, [&](size_t i) { return match_llama3(c, i, 1); });
      break;
  }
  return out;
}

} // namespace dynamo::tok
