#include "runtime/grammar/gbnf.hpp"

#include "runtime/grammar/regex.hpp"

#include <map>

namespace dynamo::gram {

namespace {

class gbnf_parser {
public:
  explicit gbnf_parser(std::string_view t) : t_(t) {}

  expected<grammar> run() {
    skip(true);
    while (i_ < t_.size()) {
      const std::string name = parse_name();
      if (name.empty()) return fail("expected a rule name");
      skip(false);
      if (t_.substr(i_, 3) != "::=") return fail("expected '::=' after '" + name + "'");
      i_ += 3;
      skip(true);
      const rule_id r = rule(name);
      if (defined_[r]) return fail("rule '" + name + "' is defined twice");
      auto body = parse_alternates(false);
      if (!body) return body.error();
      g_.define(r, *body);
      defined_[r] = true;
      skip(true);
    }
    for (const auto& [name, r] : names_)
      if (!defined_[r]) return make_error(errc::invalid_argument, "gbnf: rule '" + name + "' is used but not defined");
    auto root = names_.find("root");
    if (root == names_.end()) return make_error(errc::invalid_argument, "gbnf: no 'root' rule");
    g_.set_root(root->second);
    return std::move(g_);
  }

private:
  std::string_view t_;
  size_t i_ = 0;
  grammar g_;
  std::map<std::string, rule_id> names_;
  std::map<rule_id, bool> defined_;

  caf::error fail(const std::string& what, errc c = errc::invalid_argument) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < t_.size(); ++k) {
      if (t_[k] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    return make_error(c, "gbnf: " + what + " at line " + std::to_string(line) + ", column " + std::to_string(col));
  }

  rule_id rule(const std::string& name) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second;
    const rule_id r = g_.add_rule(name);
    names_.emplace(name, r);
    defined_[r] = false;
    return r;
  }

  static bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }

  void skip(bool newline_ok) {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '#') {
        while (i_ < t_.size() && t_[i_] != '\n' && t_[i_] != '\r') ++i_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++i_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = i_;
    while (i_ < t_.size() && word_char(t_[i_])) ++i_;
    return std::string(t_.substr(start, i_ - start));
  }

  expected<char32_t> hex(size_t n) {
    char32_t v = 0;
    for (size_t k = 0; k < n; ++k, ++i_) {
      if (i_ >= t_.size()) return fail("truncated escape");
      const char c = t_[i_];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return fail("bad hex digit in escape");
      v = v * 16 + char32_t(d);
    }
    return v;
  }

  expected<char32_t> parse_char() {
    if (i_ >= t_.size()) return fail("unexpected end of input");
    if (t_[i_] == '\\') {
      ++i_;
      if (i_ >= t_.size()) return fail("unexpected end of input");
      const char c = t_[i_++];
      switch (c) {
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      case 't': return char32_t('\t');
      case 'r': return char32_t('\r');
      case 'n': return char32_t('\n');
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^': return char32_t(c);
      default: return fail(std::string("unknown escape \\") + c);
      }
    }
    const char32_t cp = decode_utf8(t_, i_);
    if (cp == invalid_cp) return fail("invalid UTF-8");
    return cp;
  }

  expected<expr_id> parse_alternates(bool nested) {
    std::vector<expr_id> alts;
    for (;;) {
      auto s = parse_sequence(nested);
      if (!s) return s;
      alts.push_back(*s);
      if (i_ < t_.size() && t_[i_] == '|') {
        ++i_;
        skip(true);
        continue;
      }
      break;
    }
    return g_.alt(std::move(alts));
  }

  expected<expr_id> parse_sequence(bool nested) {
    std::vector<expr_id> items;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '"') {
        ++i_;
        std::string lit;
        while (i_ < t_.size() && t_[i_] != '"') {
          auto cp = parse_char();
          if (!cp) return cp.error();
          if (*cp > 0x10FFFF) return fail("code point out of range");
          append_utf8(lit, *cp);
        }
        if (i_ >= t_.size()) return fail("unterminated string literal");
        ++i_;
        items.push_back(g_.literal(lit));
      } else if (c == '[') {
        ++i_;
        bool negated = false;
        if (i_ < t_.size() && t_[i_] == '^') negated = true, ++i_;
        std::vector<cp_range> ranges;
        while (i_ < t_.size() && t_[i_] != ']') {
          auto lo = parse_char();
          if (!lo) return lo.error();
          char32_t hi = *lo;
          if (i_ + 1 < t_.size() && t_[i_] == '-' && t_[i_ + 1] != ']') {
            ++i_;
            auto h = parse_char();
            if (!h) return h.error();
            hi = *h;
          }
          if (hi < *lo) return fail("bad range in character class");
          ranges.emplace_back(*lo, hi);
        }
        if (i_ >= t_.size()) return fail("unterminated character class");
        ++i_;
        items.push_back(g_.code_points(std::move(ranges), negated));
      } else if (c == '.') {
        ++i_;
        items.push_back(g_.code_points({}, true));
      } else if (c == '(') {
        ++i_;
        skip(true);
        auto e = parse_alternates(true);
        if (!e) return e;
        if (i_ >= t_.size() || t_[i_] != ')') return fail("expected ')'");
        ++i_;
        items.push_back(*e);
      } else if (word_char(c)) {
        items.push_back(g_.ref(rule(parse_name())));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) return fail(std::string("nothing to repeat before '") + c + "'");
        auto r = parse_repetition(items.back(), nested);
        if (!r) return r;
        items.back() = *r;
      } else if (c == '<' || c == '!') {
        return fail("token references (<...>) are not supported", errc::unsupported);
      } else {
        break;
      }
      skip(nested);
    }
    return g_.seq(std::move(items));
  }

  // After an item: * + ? {m} {m,} {m,n}.
  expected<expr_id> parse_repetition(expr_id item, bool nested) {
    const char c = t_[i_++];
    uint32_t lo = c == '+' ? 1 : 0, hi = c == '?' ? 1 : grammar::unbounded;
    if (c == '{') {
      skip(nested);
      auto a = number();
      if (!a) return a.error();
      lo = hi = *a;
      skip(nested);
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        skip(nested);
        hi = grammar::unbounded;
        if (i_ < t_.size() && t_[i_] != '}') {
          auto b = number();
          if (!b) return b.error();
          hi = *b;
          skip(nested);
        }
      }
      if (i_ >= t_.size() || t_[i_] != '}') return fail("expected '}'");
      ++i_;
      if (hi < lo) return fail("{m,n} with n < m");
    }
    return g_.repeat(item, lo, hi);
  }

  expected<uint32_t> number() {
    uint64_t v = 0;
    const size_t start = i_;
    while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') {
      v = v * 10 + uint64_t(t_[i_++] - '0');
      if (v > 100000) return fail("repetition count above 100000");
    }
    if (i_ == start) return fail("expected a number");
    return static_cast<uint32_t>(v);
  }
};

} // namespace

expected<grammar> gbnf_grammar(std::string_view text) { return gbnf_parser(text).run(); }

} // namespace dynamo::gram
