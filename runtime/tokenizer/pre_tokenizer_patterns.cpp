// Each matcher follows its regex's ECMAScript/PCRE semantics: alternatives
// tried in order, greedy quantifiers giving back characters only where the
// pattern needs it. Class predicates are false past `end`.
#include "runtime/tokenizer/pre_tokenizer_patterns.hpp"

#include <algorithm>
#include <iterator>

namespace dynamo::tok::detail {

text_chars::text_chars(std::string_view text) {
  cp.reserve(text.size());
  info.reserve(text.size());
  at.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    const auto c = decode_utf8(text, i);
    cp.push_back(c.cp);
    info.push_back(char_info_of(c.cp));
    at.push_back(i);
    i += c.len;
  }
  at.push_back(text.size());
}

namespace {

// The characters of one match attempt, bounded by `end`.
struct view {
  const text_chars& c;
  size_t end;

  [[nodiscard]] bool in(size_t i) const { return i < end; }
  [[nodiscard]] char32_t cp(size_t i) const { return i < end ? c.cp[i] : 0xFFFFFFFF; }
  [[nodiscard]] bool letter(size_t i) const { return i < end && c.info[i].letter(); }
  [[nodiscard]] bool number(size_t i) const { return i < end && c.info[i].number(); }
  [[nodiscard]] bool mark(size_t i) const { return i < end && c.info[i].mark(); }
  [[nodiscard]] bool space(size_t i) const { return i < end && c.info[i].space; }
  [[nodiscard]] bool punct(size_t i) const { return i < end && c.info[i].punct(); }
  [[nodiscard]] bool symbol(size_t i) const { return i < end && c.info[i].symbol(); }
  [[nodiscard]] bool crlf(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }
  /// [^\s\p{L}\p{N}]
  [[nodiscard]] bool other(size_t i) const { return in(i) && !space(i) && !letter(i) && !number(i); }
  [[nodiscard]] unicode_category cat(size_t i) const { return i < end ? c.info[i].cat : unicode_category::undefined; }

  template <class Pred>
  [[nodiscard]] size_t run(size_t j, Pred p) const {
    while (p(j))
      ++j;
    return j;
  }
};

char32_t lower_ascii(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
bool ascii_alpha(char32_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// 's 't 're 've 'm 'll 'd at i: length in characters, 0 if none.
size_t contraction(const view& v, size_t i, bool ignore_case) {
  if (v.cp(i) != '\'')
    return 0;
  auto at = [&](size_t k) { return ignore_case ? lower_ascii(v.cp(k)) : v.cp(k); };
  const char32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  const char32_t b = at(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return 3;
  return 0;
}

// \s+(?!\S)|\s+ : a whitespace run, leaving its last character to the next
// piece when a non-space follows (unless the run is one character).
size_t whitespace_run(const view& v, size_t i) {
  const size_t j = v.run(i, [&](size_t k) { return v.space(k); });
  if (j == i)
    return 0;
  if (v.in(j) && j - i > 1)
    return j - 1 - i;
  return j - i;
}

// \s*[\r\n]+|\s+(?!\S)|\s+ : up to the last \r or \n of the whitespace run,
// else whitespace_run.
size_t newline_or_whitespace(const view& v, size_t i) {
  size_t last_nl = 0;
  bool any_nl = false;
  for (size_t j = i; v.space(j); ++j) {
    if (v.crlf(j)) {
      last_nl = j;
      any_nl = true;
    }
  }
  if (any_nl)
    return last_nl + 1 - i;
  return whitespace_run(v, i);
}

// ' '?X+ then Y* (X, Y predicates): 0 when X does not match.
template <class X, class Y>
size_t space_run_then(const view& v, size_t i, X x, Y y) {
  const size_t j = i + (v.cp(i) == ' ' ? 1 : 0);
  if (!x(j))
    return 0;
  return v.run(v.run(j, x), y) - i;
}

// The Llama 3 family: (?i:contractions)|[^\r\n\p{L}\p{N}]?W+|\p{N}{1,max}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+, where W is \p{L} (or
// [\p{L}\p{M}] with marks, which also leave the punctuation class).
size_t match_llama3_family(const text_chars& c, size_t i, size_t end, size_t max_digits, bool marks) {
  const view v{c, end};
  if (size_t n = contraction(v, i, true))
    return n;
  auto word = [&](size_t k) { return v.letter(k) || (marks && v.mark(k)); };
  if (!v.crlf(i) && !v.number(i) && (word(i) || word(i + 1)))
    return v.run(i + 1, word) - i;
  if (v.number(i)) {
    size_t j = i;
    while (v.number(j) && j - i < max_digits)
      ++j;
    return j - i;
  }
  auto other = [&](size_t k) { return v.other(k) && !(marks && v.mark(k)); };
  if (size_t n = space_run_then(v, i, other, [&](size_t k) { return v.crlf(k); }))
    return n;
  if (size_t n = newline_or_whitespace(v, i))
    return n;
  return 1;
}

// Tekken / GPT-4o words: [^\r\n\p{L}\p{N}]?A*B+ | [^\r\n\p{L}\p{N}]?A+B* with
// A = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and B = [\p{Ll}\p{Lm}\p{Lo}\p{M}].
// Returns the end of the match, or 0 when neither alternative matches at i.
size_t case_word_end(const view& v, size_t i) {
  using uc = unicode_category;
  auto upper = [&](size_t k) {
    const uc t = v.cat(k);
    return t == uc::lu || t == uc::lt || t == uc::lm || t == uc::lo || t == uc::mark;
  };
  auto lower = [&](size_t k) {
    const uc t = v.cat(k);
    return t == uc::ll || t == uc::lm || t == uc::lo || t == uc::mark;
  };
  auto upper_star_lower_plus = [&](size_t j) -> size_t {
    const size_t j1 = v.run(j, upper);
    for (size_t k = j1 + 1; k-- > j;) // A* gives back one character at a time
      if (lower(k))
        return v.run(k, lower);
    return 0;
  };
  auto upper_plus_lower_star = [&](size_t j) -> size_t {
    if (!upper(j))
      return 0;
    return v.run(v.run(j, upper), lower);
  };
  const bool prefix = v.in(i) && !v.crlf(i) && !v.letter(i) && !v.number(i);
  if (prefix)
    if (size_t e = upper_star_lower_plus(i + 1))
      return e;
  if (size_t e = upper_star_lower_plus(i))
    return e;
  if (prefix)
    if (size_t e = upper_plus_lower_star(i + 1))
      return e;
  return upper_plus_lower_star(i);
}

// The shared tail of Tekken and GPT-4o: ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t tekken_tail(const view& v, size_t i) {
  if (size_t n = space_run_then(v, i, [&](size_t k) { return v.other(k); },
                                [&](size_t k) { return v.crlf(k) || v.cp(k) == '/'; }))
    return n;
  if (size_t n = newline_or_whitespace(v, i))
    return n;
  return 1;
}

bool in_ranges(char32_t cp, const code_range* first, const code_range* last) {
  return std::any_of(first, last, [&](const code_range& r) { return cp >= r.first && cp <= r.last; });
}

// Explicit code point classes run through std::wregex in llama.cpp, which sees
// non-ASCII whitespace as \v; such characters never match these classes.
template <size_t N>
bool in_class(const view& v, size_t i, const code_range (&ranges)[N]) {
  if (!v.in(i) || (v.cp(i) >= 0x80 && v.space(i)))
    return false;
  return in_ranges(v.cp(i), std::begin(ranges), std::end(ranges));
}

constexpr code_range deepseek_letters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
constexpr code_range deepseek_punct[] = {{0x21, 0x2F},     {0x3A, 0x7E},     {0x2018, 0x201F},
                                         {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}};
constexpr code_range cjk_hangul[] = {{0x800, 0x4E00}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7FF}};
constexpr code_range cjk_kana[] = {{0x3040, 0x309F}, {0x30A0, 0x30FF}, {0x4E00, 0x9FA5}};

// \s?[class]+
template <size_t N>
size_t space_then_class(const text_chars& c, size_t i, size_t end, const code_range (&ranges)[N]) {
  const view v{c, end};
  const size_t j = i + (v.space(i) ? 1 : 0);
  auto in = [&](size_t k) { return in_class(v, k, ranges); };
  return in(j) ? v.run(j, in) - i : 0;
}

template <class Pred>
size_t run_of(const text_chars& c, size_t i, size_t end, Pred p) {
  const view v{c, end};
  return v.run(i, [&](size_t k) { return v.in(k) && p(v, k); }) - i;
}

bool punct_default(const view& v, size_t k) {
  const char32_t c = v.cp(k);
  return v.punct(k) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|';
}

} // namespace

size_t match_gpt2(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  if (size_t n = contraction(v, i, false))
    return n;
  const size_t j = i + (v.cp(i) == ' ' ? 1 : 0);
  for (auto cls : {&view::letter, &view::number, &view::other})
    if ((v.*cls)(j))
      return v.run(j, [&](size_t k) { return (v.*cls)(k); }) - i;
  if (size_t n = whitespace_run(v, i))
    return n;
  return 1;
}

size_t match_llama3(const text_chars& c, size_t i, size_t end) { return match_llama3_family(c, i, end, 3, false); }
size_t match_qwen2(const text_chars& c, size_t i, size_t end) { return match_llama3_family(c, i, end, 1, false); }
size_t match_qwen35(const text_chars& c, size_t i, size_t end) { return match_llama3_family(c, i, end, 1, true); }

size_t match_deepseek3(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
  const char32_t c0 = v.cp(i);
  if (c0 >= 0x21 && c0 <= 0x7E && !ascii_alpha(c0) && !(c0 >= '0' && c0 <= '9') && ascii_alpha(v.cp(i + 1)))
    return v.run(i + 1, [&](size_t k) { return ascii_alpha(v.cp(k)); }) - i;
  // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
  auto word = [&](size_t k) { return v.letter(k) || v.mark(k); };
  if (v.in(i) && !v.crlf(i) && !v.letter(i) && !v.punct(i) && !v.symbol(i) && word(i + 1))
    return v.run(i + 1, word) - i;
  if (word(i))
    return v.run(i, word) - i;
  // ?[\p{P}\p{S}]+[\r\n]*
  if (size_t n = space_run_then(v, i, [&](size_t k) { return v.punct(k) || v.symbol(k); },
                                [&](size_t k) { return v.crlf(k); }))
    return n;
  return newline_or_whitespace(v, i);
}

size_t match_tekken(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  if (size_t e = case_word_end(v, i))
    return e - i;
  if (v.number(i))
    return 1;
  return tekken_tail(v, i);
}

size_t match_gpt4o(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  if (size_t e = case_word_end(v, i))
    return e + contraction(v, e, true) - i;
  if (v.number(i))
    return v.run(i, [&](size_t k) { return v.number(k) && k - i < 3; }) - i;
  return tekken_tail(v, i);
}

size_t match_bloom(const text_chars& c, size_t i, size_t end) {
  // " ?[^(\s|.,!?…。，、।۔،)]+"
  static constexpr char32_t excluded[] = {U'(', U'|', U'.', U',', U'!', U'?', U'…', U'。',
                                          U'，', U'、', U'।', U'۔', U'،', U')'};
  const view v{c, end};
  auto word = [&](size_t k) {
    return v.in(k) && !v.space(k) && std::find(std::begin(excluded), std::end(excluded), v.cp(k)) == std::end(excluded);
  };
  const size_t j = i + (v.cp(i) == ' ' ? 1 : 0);
  return word(j) ? v.run(j, word) - i : 0;
}

size_t match_number(const text_chars& c, size_t i, size_t end) { return view{c, end}.number(i) ? 1 : 0; }

size_t match_numbers(const text_chars& c, size_t i, size_t end) {
  return run_of(c, i, end, [](const view& v, size_t k) { return v.number(k); });
}

size_t match_numbers_3(const text_chars& c, size_t i, size_t end) {
  return run_of(c, i, end, [i](const view& v, size_t k) { return v.number(k) && k - i < 3; });
}

size_t match_ascii_digits_3(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  for (size_t k = i; k < i + 3; ++k)
    if (v.cp(k) < '0' || v.cp(k) > '9')
      return 0;
  return 3;
}

size_t match_punct_default(const text_chars& c, size_t i, size_t end) { return run_of(c, i, end, punct_default); }

size_t match_punct_falcon(const text_chars& c, size_t i, size_t end) {
  return run_of(c, i, end, [](const view& v, size_t k) { return punct_default(v, k) || v.cp(k) == '`'; });
}

size_t match_newline(const text_chars& c, size_t i, size_t end) { return view{c, end}.crlf(i) ? 1 : 0; }

size_t match_space_letters(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  const size_t j = i + (v.space(i) ? 1 : 0);
  return v.letter(j) ? v.run(j, [&](size_t k) { return v.letter(k); }) - i : 0;
}

size_t match_space_punct(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  const size_t j = i + (v.space(i) ? 1 : 0);
  return v.punct(j) ? v.run(j, [&](size_t k) { return v.punct(k); }) - i : 0;
}

size_t match_deepseek_llm_letters(const text_chars& c, size_t i, size_t end) {
  return space_then_class(c, i, end, deepseek_letters);
}

size_t match_deepseek_llm_punct(const text_chars& c, size_t i, size_t end) {
  return space_then_class(c, i, end, deepseek_punct);
}

size_t match_cjk_hangul(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  return v.run(i, [&](size_t k) { return in_class(v, k, cjk_hangul); }) - i;
}

size_t match_cjk_kana(const text_chars& c, size_t i, size_t end) {
  const view v{c, end};
  return v.run(i, [&](size_t k) { return in_class(v, k, cjk_kana); }) - i;
}

size_t trailing_whitespace(const text_chars& c, size_t begin, size_t end) {
  size_t i = end;
  while (i > begin && c.info[i - 1].space)
    --i;
  return end - i;
}

} // namespace dynamo::tok::detail
