#include "runtime/grammar/grammar.hpp"

#include <algorithm>
#include <cstdio>

namespace dynamo::gram {

rule_id grammar::add_rule(std::string_view name) {
  std::string n(name.empty() ? "rule" : name);
  if (find_rule(n)) {
    for (size_t i = 1;; ++i) {
      std::string cand = n + "-" + std::to_string(i);
      if (!find_rule(cand)) {
        n = std::move(cand);
        break;
      }
    }
  }
  rules_.push_back({std::move(n), undefined});
  return static_cast<rule_id>(rules_.size() - 1);
}

std::optional<rule_id> grammar::find_rule(std::string_view name) const {
  for (size_t i = 0; i < rules_.size(); ++i)
    if (rules_[i].name == name) return static_cast<rule_id>(i);
  return std::nullopt;
}

void grammar::define(rule_id r, expr_id body) { rules_[r].body = body; }

expr_id grammar::empty() {
  exprs_.push_back(expr{});
  return static_cast<expr_id>(exprs_.size() - 1);
}

expr_id grammar::bytes(const byte_set& s) {
  expr e;
  e.kind = expr_kind::bytes;
  e.bytes = s;
  exprs_.push_back(std::move(e));
  return static_cast<expr_id>(exprs_.size() - 1);
}

expr_id grammar::byte_range(uint8_t lo, uint8_t hi) {
  byte_set s;
  s.set_range(lo, hi);
  return bytes(s);
}

expr_id grammar::literal(std::string_view text) {
  if (text.size() == 1) return byte_range(uint8_t(text[0]), uint8_t(text[0]));
  std::vector<expr_id> items;
  items.reserve(text.size());
  for (char c : text) items.push_back(byte_range(uint8_t(c), uint8_t(c)));
  return seq(std::move(items));
}

namespace {

void encode(char32_t cp, std::array<uint8_t, 4>& out, int& n) {
  if (cp < 0x80) {
    out[0] = uint8_t(cp), n = 1;
  } else if (cp < 0x800) {
    out[0] = uint8_t(0xC0 | (cp >> 6)), out[1] = uint8_t(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    out[0] = uint8_t(0xE0 | (cp >> 12)), out[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[2] = uint8_t(0x80 | (cp & 0x3F)), n = 3;
  } else {
    out[0] = uint8_t(0xF0 | (cp >> 18)), out[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
    out[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F)), out[3] = uint8_t(0x80 | (cp & 0x3F)), n = 4;
  }
}

using byte_seq = std::vector<std::pair<uint8_t, uint8_t>>;

// Splits lo..hi until each piece is a product of per-byte ranges: first at
// the surrogate gap and the encoding-length boundaries, then wherever the low
// 6*i bits do not span their full range.
void split(char32_t lo, char32_t hi, std::vector<byte_seq>& out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) split(lo, 0xD7FF, out);
    if (hi > 0xDFFF) split(0xE000, hi, out);
    return;
  }
  for (char32_t max : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= max && hi > max) {
      split(lo, max, out);
      split(max + 1, hi, out);
      return;
    }
  }
  std::array<uint8_t, 4> a{}, b{};
  int n = 0, m = 0;
  encode(lo, a, n);
  encode(hi, b, m);
  for (int i = 1; i < n; ++i) {
    const char32_t mask = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        split(lo, lo | mask, out);
        split((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        split(lo, (hi & ~mask) - 1, out);
        split(hi & ~mask, hi, out);
        return;
      }
    }
  }
  byte_seq s;
  for (int i = 0; i < n; ++i) s.emplace_back(a[i], b[i]);
  out.push_back(std::move(s));
}

} // namespace

void append_utf8(std::string& out, char32_t cp) {
  std::array<uint8_t, 4> a{};
  int n = 0;
  encode(cp, a, n);
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(a[i]));
}

std::vector<byte_seq> utf8_sequences(char32_t lo, char32_t hi) {
  std::vector<byte_seq> out;
  split(lo, std::min<char32_t>(hi, 0x10FFFF), out);
  return out;
}

expr_id grammar::code_points(std::vector<cp_range> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<cp_range> merged;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) continue;
    if (!merged.empty() && lo <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, hi);
    else
      merged.emplace_back(lo, hi);
  }
  if (negated) {
    std::vector<cp_range> inv;
    char32_t next = 0;
    for (auto [lo, hi] : merged) {
      if (lo > next) inv.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= 0x10FFFF) inv.emplace_back(next, 0x10FFFF);
    merged = std::move(inv);
  }
  // Single-byte code points share one byte set; longer ones are sequences.
  byte_set ascii;
  std::vector<expr_id> alts;
  for (auto [lo, hi] : merged) {
    for (const byte_seq& s : utf8_sequences(lo, hi)) {
      if (s.size() == 1) {
        ascii.set_range(s[0].first, s[0].second);
        continue;
      }
      std::vector<expr_id> items;
      for (auto [a, b] : s) items.push_back(byte_range(a, b));
      alts.push_back(seq(std::move(items)));
    }
  }
  if (!ascii.empty() || alts.empty()) alts.insert(alts.begin(), bytes(ascii));
  return alts.size() == 1 ? alts[0] : alt(std::move(alts));
}

expr_id grammar::seq(std::vector<expr_id> items) {
  if (items.size() == 1) return items[0];
  if (items.empty()) return empty();
  expr e;
  e.kind = expr_kind::seq;
  e.children = std::move(items);
  exprs_.push_back(std::move(e));
  return static_cast<expr_id>(exprs_.size() - 1);
}

expr_id grammar::alt(std::vector<expr_id> items) {
  if (items.size() == 1) return items[0];
  expr e;
  e.kind = expr_kind::alt;
  e.children = std::move(items);
  if (e.children.empty()) { // no alternative: matches nothing
    e.kind = expr_kind::bytes;
  }
  exprs_.push_back(std::move(e));
  return static_cast<expr_id>(exprs_.size() - 1);
}

expr_id grammar::repeat(expr_id child, uint32_t min, uint32_t max) {
  if (min == 1 && max == 1) return child;
  expr e;
  e.kind = expr_kind::repeat;
  e.children = {child};
  e.min = min;
  e.max = std::max(min, max);
  exprs_.push_back(std::move(e));
  return static_cast<expr_id>(exprs_.size() - 1);
}

expr_id grammar::ref(rule_id r) {
  expr e;
  e.kind = expr_kind::ref;
  e.rule = r;
  exprs_.push_back(std::move(e));
  return static_cast<expr_id>(exprs_.size() - 1);
}

expected<void> grammar::check() const {
  if (root_ >= rules_.size()) return make_error(errc::invalid_argument, "grammar has no root rule");
  for (const rule_entry& r : rules_)
    if (r.body == undefined) return make_error(errc::invalid_argument, "grammar rule '" + r.name + "' is not defined");
  return {};
}

namespace {

std::string byte_text(uint8_t b) {
  if (b == '\\' || b == ']' || b == '[' || b == '-' || b == '^' || b == '"') return std::string("\\") + char(b);
  if (b >= 0x20 && b < 0x7F) return std::string(1, char(b));
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", b);
  return buf;
}

} // namespace

std::string grammar::to_string() const {
  // Prints expressions recursively; shared sub-expressions print twice.
  auto print = [&](auto&& self, expr_id id, std::string& out) -> void {
    const expr& e = exprs_[id];
    switch (e.kind) {
    case expr_kind::empty: out += "\"\""; break;
    case expr_kind::bytes: {
      out += '[';
      for (unsigned b = 0; b < 256; ++b) {
        if (!e.bytes.test(uint8_t(b))) continue;
        unsigned c = b;
        while (c + 1 < 256 && e.bytes.test(uint8_t(c + 1))) ++c;
        out += byte_text(uint8_t(b));
        if (c > b) out += "-" + byte_text(uint8_t(c));
        b = c;
      }
      out += ']';
      break;
    }
    case expr_kind::seq:
    case expr_kind::alt:
      out += '(';
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i) out += e.kind == expr_kind::seq ? " " : " | ";
        self(self, e.children[i], out);
      }
      out += ')';
      break;
    case expr_kind::repeat:
      self(self, e.children[0], out);
      out += "{" + std::to_string(e.min) + "," + (e.max == unbounded ? "" : std::to_string(e.max)) + "}";
      break;
    case expr_kind::ref: out += rules_[e.rule].name; break;
    }
  };
  std::string out;
  for (const rule_entry& r : rules_) {
    out += r.name + " ::= ";
    if (r.body == undefined)
      out += "<undefined>";
    else
      print(print, r.body, out);
    out += '\n';
  }
  return out;
}

} // namespace dynamo::gram
