#include "runtime/grammar/regex.hpp"

#include <algorithm>
#include <cstdio>

namespace dynamo::gram {

char32_t decode_utf8(std::string_view s, size_t& i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + size_t(n) > s.size()) {
    ++i;
    return invalid_cp;
  }
  char32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (int k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + size_t(k)]);
    if ((b >> 6) != 2) {
      ++i;
      return invalid_cp;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += size_t(n);
  return cp;
}

std::string json_escape_cp(char32_t cp) {
  switch (cp) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\n': return "\\n";
  case '\t': return "\\t";
  case '\r': return "\\r";
  case '\b': return "\\b";
  case '\f': return "\\f";
  default: break;
  }
  if (cp < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
    return buf;
  }
  std::string out;
  append_utf8(out, cp);
  return out;
}

namespace {

using ranges = std::vector<cp_range>;

ranges normalize(ranges r) {
  std::sort(r.begin(), r.end());
  ranges out;
  for (auto [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.emplace_back(lo, hi);
  }
  return out;
}

ranges complement(const ranges& r) {
  ranges out;
  char32_t next = 0;
  for (auto [lo, hi] : normalize(r)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  return out;
}

const ranges digit = {{'0', '9'}};
const ranges word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const ranges space = {{'\t', '\r'}, {' ', ' '}};

class regex_parser {
public:
  regex_parser(grammar& g, std::string_view p, const regex_options& o) : g_(g), p_(p), o_(o) {}

  expected<expr_id> run() {
    if (!p_.empty() && p_.front() == '^') ++i_;
    auto e = parse_alt();
    if (!e) return e;
    if (i_ < p_.size()) return fail(errc::invalid_argument, "unbalanced ')'");
    return e;
  }

private:
  grammar& g_;
  std::string_view p_;
  regex_options o_;
  size_t i_ = 0;
  int depth_ = 0;

  caf::error fail(errc c, const std::string& what) const {
    return make_error(c, "regex: " + what + " at offset " + std::to_string(i_) + " in '" + std::string(p_) + "'");
  }

  bool at_end_anchor() const { return i_ + 1 == p_.size() && p_[i_] == '$' && depth_ == 0; }

  expected<expr_id> parse_alt() {
    std::vector<expr_id> alts;
    for (;;) {
      auto s = parse_seq();
      if (!s) return s;
      alts.push_back(*s);
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      break;
    }
    return g_.alt(std::move(alts));
  }

  expected<expr_id> parse_seq() {
    std::vector<expr_id> items;
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      if (at_end_anchor()) {
        ++i_;
        break;
      }
      auto a = parse_atom();
      if (!a) return a;
      auto q = parse_quantifier(*a);
      if (!q) return q;
      items.push_back(*q);
    }
    return g_.seq(std::move(items));
  }

  expected<uint32_t> parse_int() {
    size_t start = i_;
    uint64_t v = 0;
    while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9') {
      v = v * 10 + uint64_t(p_[i_] - '0');
      if (v > 100000) return fail(errc::unsupported, "repetition count above 100000");
      ++i_;
    }
    if (i_ == start) return fail(errc::invalid_argument, "expected a number");
    return static_cast<uint32_t>(v);
  }

  expected<expr_id> parse_quantifier(expr_id atom) {
    for (;;) {
      if (i_ >= p_.size()) return atom;
      uint32_t lo = 0, hi = 0;
      const char c = p_[i_];
      if (c == '?') {
        lo = 0, hi = 1, ++i_;
      } else if (c == '*') {
        lo = 0, hi = grammar::unbounded, ++i_;
      } else if (c == '+') {
        lo = 1, hi = grammar::unbounded, ++i_;
      } else if (c == '{' && i_ + 1 < p_.size() && p_[i_ + 1] >= '0' && p_[i_ + 1] <= '9') {
        ++i_;
        auto a = parse_int();
        if (!a) return a.error();
        lo = hi = *a;
        if (i_ < p_.size() && p_[i_] == ',') {
          ++i_;
          hi = grammar::unbounded;
          if (i_ < p_.size() && p_[i_] != '}') {
            auto b = parse_int();
            if (!b) return b.error();
            hi = *b;
          }
        }
        if (i_ >= p_.size() || p_[i_] != '}') return fail(errc::invalid_argument, "unterminated {m,n}");
        ++i_;
        if (hi < lo) return fail(errc::invalid_argument, "{m,n} with n < m");
      } else {
        return atom;
      }
      if (i_ < p_.size() && p_[i_] == '?') ++i_; // lazy: same language
      atom = g_.repeat(atom, lo, hi);
    }
  }

  expr_id emit(const ranges& r) {
    if (!o_.json_string) return g_.code_points(r);
    // Characters a JSON string must escape become their escape sequences.
    ranges plain;
    std::vector<expr_id> alts;
    for (auto [lo, hi] : normalize(r)) {
      for (char32_t c = lo; c <= hi && c < 0x20; ++c) alts.push_back(g_.literal(json_escape_cp(c)));
      if (lo <= '"' && hi >= '"') alts.push_back(g_.literal("\\\""));
      if (lo <= '\\' && hi >= '\\') alts.push_back(g_.literal("\\\\"));
      plain.emplace_back(std::max<char32_t>(lo, 0x20), hi);
    }
    ranges keep;
    for (auto [lo, hi] : plain) {
      if (lo > hi) continue;
      for (char32_t ex : {char32_t('"'), char32_t('\\')}) {
        if (lo <= ex && ex <= hi) {
          if (lo < ex) keep.emplace_back(lo, ex - 1);
          lo = ex + 1;
        }
      }
      if (lo <= hi) keep.emplace_back(lo, hi);
    }
    if (!keep.empty()) alts.insert(alts.begin(), g_.code_points(keep));
    return g_.alt(std::move(alts));
  }

  expected<char32_t> parse_hex(size_t n) {
    if (i_ + n > p_.size()) return fail(errc::invalid_argument, "truncated hex escape");
    char32_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = p_[i_++];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return fail(errc::invalid_argument, "bad hex digit");
      v = v * 16 + char32_t(d);
    }
    return v;
  }

  // After a backslash: a class (\d...) or one code point.
  expected<ranges> parse_escape(bool in_class) {
    if (i_ >= p_.size()) return fail(errc::invalid_argument, "trailing backslash");
    const char c = p_[i_++];
    switch (c) {
    case 'd': return digit;
    case 'D': return complement(digit);
    case 'w': return word;
    case 'W': return complement(word);
    case 's': return space;
    case 'S': return complement(space);
    case 'n': return ranges{{'\n', '\n'}};
    case 't': return ranges{{'\t', '\t'}};
    case 'r': return ranges{{'\r', '\r'}};
    case 'f': return ranges{{'\f', '\f'}};
    case 'v': return ranges{{'\v', '\v'}};
    case '0': return ranges{{0, 0}};
    case 'x': {
      auto v = parse_hex(2);
      if (!v) return v.error();
      return ranges{{*v, *v}};
    }
    case 'u': {
      expected<char32_t> v = char32_t{0};
      if (i_ < p_.size() && p_[i_] == '{') {
        ++i_;
        size_t n = 0;
        while (i_ + n < p_.size() && p_[i_ + n] != '}') ++n;
        v = parse_hex(n);
        if (!v) return v.error();
        ++i_;
      } else {
        v = parse_hex(4);
        if (!v) return v.error();
      }
      if (*v > 0x10FFFF || (*v >= 0xD800 && *v <= 0xDFFF)) return fail(errc::unsupported, "surrogate or out-of-range \\u escape");
      return ranges{{*v, *v}};
    }
    case 'b':
      if (in_class) return ranges{{'\b', '\b'}};
      return fail(errc::unsupported, "word boundary \\b");
    case 'B': return fail(errc::unsupported, "\\B");
    default: break;
    }
    if (c >= '1' && c <= '9') return fail(errc::unsupported, "backreference");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return fail(errc::unsupported, std::string("escape \\") + c);
    --i_;
    const char32_t cp = decode_utf8(p_, i_);
    if (cp == invalid_cp) return fail(errc::invalid_argument, "invalid UTF-8");
    return ranges{{cp, cp}};
  }

  expected<ranges> parse_class() {
    bool negated = false;
    if (i_ < p_.size() && p_[i_] == '^') negated = true, ++i_;
    ranges out;
    bool first = true;
    for (;;) {
      if (i_ >= p_.size()) return fail(errc::invalid_argument, "unterminated character class");
      if (p_[i_] == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      auto lo = class_atom();
      if (!lo) return lo.error();
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']' && lo->size() == 1 && (*lo)[0].first == (*lo)[0].second) {
        ++i_;
        auto hi = class_atom();
        if (!hi) return hi.error();
        if (hi->size() != 1 || (*hi)[0].first != (*hi)[0].second || (*hi)[0].first < (*lo)[0].first)
          return fail(errc::invalid_argument, "bad range in character class");
        out.emplace_back((*lo)[0].first, (*hi)[0].first);
      } else {
        out.insert(out.end(), lo->begin(), lo->end());
      }
    }
    return negated ? complement(out) : normalize(out);
  }

  expected<ranges> class_atom() {
    if (p_[i_] == '\\') {
      ++i_;
      return parse_escape(true);
    }
    const char32_t cp = decode_utf8(p_, i_);
    if (cp == invalid_cp) return fail(errc::invalid_argument, "invalid UTF-8");
    return ranges{{cp, cp}};
  }

  expected<expr_id> parse_atom() {
    const char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (i_ < p_.size() && p_[i_] == '?') {
        if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
          i_ += 2;
        } else if (i_ + 1 < p_.size() && p_[i_ + 1] == '<' && i_ + 2 < p_.size() && p_[i_ + 2] != '=' &&
                   p_[i_ + 2] != '!') {
          const size_t close = p_.find('>', i_);
          if (close == std::string_view::npos) return fail(errc::invalid_argument, "unterminated group name");
          i_ = close + 1;
        } else {
          return fail(errc::unsupported, "lookaround or group flags");
        }
      }
      ++depth_;
      auto e = parse_alt();
      --depth_;
      if (!e) return e;
      if (i_ >= p_.size() || p_[i_] != ')') return fail(errc::invalid_argument, "missing ')'");
      ++i_;
      return e;
    }
    if (c == '[') {
      ++i_;
      auto r = parse_class();
      if (!r) return r.error();
      return emit(*r);
    }
    if (c == '.') {
      ++i_;
      return emit(complement({{'\n', '\n'}, {'\r', '\r'}}));
    }
    if (c == '\\') {
      ++i_;
      auto r = parse_escape(false);
      if (!r) return r.error();
      return emit(*r);
    }
    if (c == '^' || c == '$') return fail(errc::unsupported, "anchor inside the pattern");
    if (c == '*' || c == '+' || c == '?') return fail(errc::invalid_argument, "nothing to repeat");
    const char32_t cp = decode_utf8(p_, i_);
    if (cp == invalid_cp) return fail(errc::invalid_argument, "invalid UTF-8");
    return emit({{cp, cp}});
  }
};

} // namespace

expected<expr_id> add_regex(grammar& g, std::string_view pattern, const regex_options& o) {
  return regex_parser(g, pattern, o).run();
}

expected<grammar> regex_grammar(std::string_view pattern) {
  grammar g;
  const rule_id root = g.add_rule("root");
  auto e = add_regex(g, pattern);
  if (!e) return e.error();
  g.define(root, *e);
  g.set_root(root);
  return g;
}

expected<grammar> choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) return make_error(errc::invalid_argument, "guided_choice: the list of choices is empty");
  grammar g;
  const rule_id root = g.add_rule("root");
  std::vector<expr_id> alts;
  for (const std::string& c : choices) alts.push_back(g.literal(c));
  g.define(root, g.alt(std::move(alts)));
  g.set_root(root);
  return g;
}

} // namespace dynamo::gram
