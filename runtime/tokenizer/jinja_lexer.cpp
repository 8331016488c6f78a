#include "runtime/tokenizer/jinja_lexer.hpp"

#include <algorithm>
#include <cctype>

namespace dynamo::tok::jinja {

namespace {

caf::error syntax(int line, const std::string& what) {
  return make_error(errc::invalid_argument, "chat template line " + std::to_string(line) + ": " + what);
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// A tag as found in the source, before whitespace control is applied.
struct raw_tag {
  segment::kind k;
  size_t open;  ///< offset of "{{" / "{%" / "{#"
  size_t close; ///< offset just past "}}" / "%}" / "#}"
  std::string inner;
  bool strip_before = false, keep_before = false; ///< "{%-" / "{%+"
  bool strip_after = false, keep_after = false;   ///< "-%}" / "+%}"
  int line = 1;
};

// Finds the end delimiter of the tag whose content starts at `i`, skipping
// string literals. Returns npos when unterminated.
size_t find_close(std::string_view src, size_t i, segment::kind k) {
  if (k == segment::kind::comment)
    return src.find("#}", i);
  const char want = k == segment::kind::output ? '}' : '%';
  char quote = 0;
  for (size_t p = i; p + 1 < src.size(); ++p) {
    const char c = src[p];
    if (quote) {
      if (c == '\\')
        ++p;
      else if (c == quote)
        quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == want && src[p + 1] == '}') {
      return p;
    }
  }
  return std::string_view::npos;
}

expected<std::vector<raw_tag>> find_tags(std::string_view src) {
  std::vector<raw_tag> tags;
  int line = 1;
  size_t counted = 0;
  for (size_t pos = 0;;) {
    size_t o = pos;
    while ((o = src.find('{', o)) != std::string_view::npos && o + 1 < src.size() && src[o + 1] != '{' &&
           src[o + 1] != '%' && src[o + 1] != '#')
      ++o;
    if (o == std::string_view::npos || o + 1 >= src.size())
      break;
    line += static_cast<int>(std::count(src.begin() + static_cast<long>(counted), src.begin() + static_cast<long>(o), '\n'));
    counted = o;
    raw_tag t;
    t.k = src[o + 1] == '{' ? segment::kind::output : src[o + 1] == '%' ? segment::kind::block : segment::kind::comment;
    t.open = o;
    t.line = line;
    size_t i = o + 2;
    if (i < src.size() && (src[i] == '-' || src[i] == '+')) {
      (src[i] == '-' ? t.strip_before : t.keep_before) = true;
      ++i;
    }
    const size_t c = find_close(src, i, t.k);
    if (c == std::string_view::npos)
      return syntax(line, "unclosed tag '" + std::string(src.substr(o, 2)) + "'");
    size_t e = c;
    if (e > i && (src[e - 1] == '-' || src[e - 1] == '+')) {
      (src[e - 1] == '-' ? t.strip_after : t.keep_after) = true;
      --e;
    }
    t.inner = std::string(src.substr(i, e - i));
    t.close = c + 2;
    pos = t.close;
    tags.push_back(std::move(t));
  }
  return tags;
}

// [begin, end) of the text between two tags after whitespace control.
// `prev` is the tag before the text (null at the start), `next` the one after.
std::pair<size_t, size_t> trim_text(std::string_view src, size_t begin, size_t end, const raw_tag* prev,
                                    const raw_tag* next) {
  const size_t orig_begin = begin;
  if (prev) {
    const bool block = prev->k != segment::kind::output;
    if (prev->strip_after) {
      while (begin < end && is_ws(src[begin]))
        ++begin;
    } else if (block && !prev->keep_after) { // trim_blocks: drop one newline
      if (begin < end && src[begin] == '\n')
        ++begin;
      else if (begin + 1 < end && src[begin] == '\r' && src[begin + 1] == '\n')
        begin += 2;
    }
  }
  if (next) {
    const bool block = next->k != segment::kind::output;
    if (next->strip_before) {
      while (end > begin && is_ws(src[end - 1]))
        --end;
    } else if (block && !next->keep_before) { // lstrip_blocks: blanks from line start to the tag
      size_t p = end;
      while (p > orig_begin && (src[p - 1] == ' ' || src[p - 1] == '\t'))
        --p;
      const bool line_start = p == 0 || src[p - 1] == '\n';
      if (line_start)
        end = std::max(begin, p);
    }
  }
  return {begin, std::max(begin, end)};
}

// Jinja reads templates with str.splitlines() and joins with "\n": every line
// break (\r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029) becomes "\n", and
// without keep_trailing_newline (HF's setting) one final line break is dropped.
std::string normalize_newlines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    const std::string_view rest = src.substr(i);
    if (c == '\r' && rest.starts_with("\r\n")) {
      out += '\n';
      ++i;
    } else if (c == '\r' || c == '\v' || c == '\f' || (c >= '\x1c' && c <= '\x1e')) {
      out += '\n';
    } else if (rest.starts_with("\xC2\x85")) {
      out += '\n';
      i += 1;
    } else if (rest.starts_with("\xE2\x80\xA8") || rest.starts_with("\xE2\x80\xA9")) {
      out += '\n';
      i += 2;
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

} // namespace

expected<std::vector<segment>> split_segments(std::string_view source) {
  const std::string normalized = normalize_newlines(source);
  const std::string_view src = normalized;
  auto tags = find_tags(src);
  if (!tags)
    return std::move(tags.error());
  std::vector<segment> out;
  size_t text_from = 0;
  int line = 1;
  for (size_t k = 0; k <= tags->size(); ++k) {
    const raw_tag* prev = k > 0 ? &(*tags)[k - 1] : nullptr;
    const raw_tag* next = k < tags->size() ? &(*tags)[k] : nullptr;
    const size_t text_to = next ? next->open : src.size();
    auto [b, e] = trim_text(src, text_from, text_to, prev, next);
    out.push_back({segment::kind::text, std::string(src.substr(b, e - b)), line});
    if (!next)
      break;
    out.push_back({next->k, next->inner, next->line});
    line = next->line + static_cast<int>(std::count(src.begin() + static_cast<long>(next->open),
                                                    src.begin() + static_cast<long>(next->close), '\n'));
    text_from = next->close;
  }
  return out;
}

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Decodes a quoted string starting at s[i] (the quote); advances i past it.
expected<std::string> read_string(std::string_view s, size_t& i, int line) {
  const char q = s[i++];
  std::string out;
  while (i < s.size() && s[i] != q) {
    char c = s[i++];
    if (c == '\\' && i < s.size()) {
      const char e = s[i++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case '\\': case '\'': case '"': out += e; break;
        default: out += '\\'; out += e; break; // Python keeps unknown escapes
      }
      continue;
    }
    out += c;
  }
  if (i >= s.size())
    return syntax(line, "unterminated string literal");
  ++i;
  return out;
}

} // namespace

expected<std::vector<token>> tokenize(std::string_view s, int line) {
  static constexpr std::string_view two[] = {"//", "**", "==", "!=", "<=", ">="};
  static constexpr std::string_view one = "+-*/%~<>()[]{}.,:|=";
  std::vector<token> out;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (is_ws(c)) {
      line += c == '\n';
      ++i;
    } else if (c == '\'' || c == '"') {
      auto str = read_string(s, i, line);
      if (!str)
        return std::move(str.error());
      out.push_back({token::kind::string, std::move(*str)});
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
        ++j;
      const bool real = j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]));
      if (real)
        for (++j; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]));)
          ++j;
      token t{real ? token::kind::real : token::kind::integer, std::string(s.substr(i, j - i))};
      if (real)
        t.real = std::stod(t.text);
      else if (t.text.size() > 18)
        return syntax(line, "integer literal too large");
      else
        t.integer = std::stoll(t.text);
      out.push_back(std::move(t));
      i = j;
    } else if (ident_start(c)) {
      size_t j = i;
      while (j < s.size() && ident_char(s[j]))
        ++j;
      out.push_back({token::kind::name, std::string(s.substr(i, j - i))});
      i = j;
    } else if (i + 1 < s.size() && std::find(std::begin(two), std::end(two), s.substr(i, 2)) != std::end(two)) {
      out.push_back({token::kind::op, std::string(s.substr(i, 2))});
      i += 2;
    } else if (one.find(c) != std::string_view::npos) {
      out.push_back({token::kind::op, std::string(1, c)});
      ++i;
    } else {
      return syntax(line, std::string("unexpected character '") + c + "'");
    }
  }
  out.push_back({token::kind::end, ""});
  return out;
}

} // namespace dynamo::tok::jinja
