#include "runtime/grammar/json_primitives.hpp"

#include "runtime/grammar/regex.hpp"

#include <algorithm>
#include <map>

namespace dynamo::gram::detail {

std::string json_blocks::suffix() const {
  switch (o_.whitespace) {
  case json_whitespace::none: return "-compact";
  case json_whitespace::single_space: return "";
  case json_whitespace::flexible: return "-ws" + std::to_string(o_.max_whitespace);
  }
  return "";
}

expr_id json_blocks::ws_sep() {
  switch (o_.whitespace) {
  case json_whitespace::none: return g_.empty();
  case json_whitespace::single_space: return g_.optional(g_.literal(" "));
  case json_whitespace::flexible: break;
  }
  return ws_in();
}

expr_id json_blocks::ws_in() {
  if (o_.whitespace != json_whitespace::flexible || o_.max_whitespace == 0) return g_.empty();
  byte_set s;
  for (char c : {' ', '\t', '\n', '\r'}) s.set(uint8_t(c));
  return g_.repeat(g_.bytes(s), 0, o_.max_whitespace);
}

expr_id json_blocks::comma() { return g_.seq({ws_in(), g_.literal(","), ws_sep()}); }
expr_id json_blocks::colon() { return g_.seq({ws_in(), g_.literal(":"), ws_sep()}); }

expr_id json_blocks::string_char() {
  // Raw: any code point but '"', '\' and controls. Escaped: \" \\ \/ \b \f \n
  // \r \t, or \u with four hex digits that are not a surrogate (a surrogate
  // pair would count as one character where the grammar counted two).
  const expr_id raw = g_.code_points({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true);
  byte_set simple;
  for (char c : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'}) simple.set(uint8_t(c));
  byte_set hex, hex_no_d, low;
  hex.set_range('0', '9'), hex.set_range('a', 'f'), hex.set_range('A', 'F');
  hex_no_d = hex;
  hex_no_d.bits = {};
  hex_no_d.set_range('0', '9'), hex_no_d.set_range('a', 'c'), hex_no_d.set_range('A', 'C');
  hex_no_d.set_range('e', 'f'), hex_no_d.set_range('E', 'F');
  low.set_range('0', '7');
  byte_set d;
  d.set('d'), d.set('D');
  const expr_id u = g_.seq({g_.literal("u"), g_.alt({g_.seq({g_.bytes(hex_no_d), g_.bytes(hex), g_.bytes(hex), g_.bytes(hex)}),
                                                      g_.seq({g_.bytes(d), g_.bytes(low), g_.bytes(hex), g_.bytes(hex)})})});
  const expr_id esc = g_.seq({g_.literal("\\"), g_.alt({g_.bytes(simple), u})});
  return g_.alt({raw, esc});
}

rule_id json_blocks::string() {
  const std::string name = "json-string";
  if (auto r = existing(name)) return *r;
  const rule_id r = g_.add_rule(name);
  g_.define(r, g_.seq({g_.literal("\""), g_.star(string_char()), g_.literal("\"")}));
  return r;
}

expr_id json_blocks::string_length(uint32_t lo, uint32_t hi) {
  return g_.seq({g_.literal("\""), g_.repeat(string_char(), lo, hi), g_.literal("\"")});
}

expr_id json_blocks::fraction_digits() { return g_.repeat(digits(), 1, 16); }

rule_id json_blocks::number() {
  const std::string name = "json-number";
  if (auto r = existing(name)) return *r;
  const rule_id r = g_.add_rule(name);
  byte_set e, sign;
  e.set('e'), e.set('E'), sign.set('+'), sign.set('-');
  const expr_id intpart = g_.alt({g_.literal("0"), g_.seq({g_.byte_range('1', '9'), g_.repeat(digits(), 0, 15)})});
  const expr_id frac = g_.optional(g_.seq({g_.literal("."), fraction_digits()}));
  const expr_id exp = g_.optional(g_.seq({g_.bytes(e), g_.optional(g_.bytes(sign)), g_.repeat(digits(), 1, 2)}));
  g_.define(r, g_.seq({g_.optional(g_.literal("-")), intpart, frac, exp}));
  return r;
}

rule_id json_blocks::integer() {
  const std::string name = "json-integer";
  if (auto r = existing(name)) return *r;
  const rule_id r = g_.add_rule(name);
  const expr_id intpart = g_.alt({g_.literal("0"), g_.seq({g_.byte_range('1', '9'), g_.repeat(digits(), 0, 15)})});
  g_.define(r, g_.seq({g_.optional(g_.literal("-")), intpart}));
  return r;
}

rule_id json_blocks::value() {
  const std::string name = "json-value" + suffix();
  if (auto r = existing(name)) return *r;
  const rule_id r = g_.add_rule(name);
  const rule_id o = object(), a = array(), s = string(), n = number();
  g_.define(r, g_.alt({g_.ref(o), g_.ref(a), g_.ref(s), g_.ref(n), g_.literal("true"), g_.literal("false"),
                       g_.literal("null")}));
  return r;
}

rule_id json_blocks::object() {
  const std::string name = "json-object" + suffix();
  if (auto r = existing(name)) return *r;
  const rule_id r = g_.add_rule(name);
  const rule_id s = string(), v = value();
  const expr_id member = g_.seq({g_.ref(s), colon(), g_.ref(v)});
  const expr_id members = g_.seq({member, g_.star(g_.seq({comma(), g_.seq({g_.ref(s), colon(), g_.ref(v)})})), ws_in()});
  g_.define(r, g_.seq({g_.literal("{"), ws_in(), g_.optional(members), g_.literal("}")}));
  return r;
}

rule_id json_blocks::array() {
  const std::string name = "json-array" + suffix();
  if (auto r = existing(name)) return *r;
  const rule_id r = g_.add_rule(name);
  const rule_id v = value();
  const expr_id items = g_.seq({g_.ref(v), g_.star(g_.seq({comma(), g_.ref(v)})), ws_in()});
  g_.define(r, g_.seq({g_.literal("["), ws_in(), g_.optional(items), g_.literal("]")}));
  return r;
}

namespace {

struct key_trie {
  std::map<char, key_trie> children;
  bool terminal = false;
};

bool simple_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

} // namespace

expr_id json_blocks::key_excluding(const std::set<std::string>& names) {
  key_trie root;
  for (const std::string& n : names) {
    if (n.empty() || !std::all_of(n.begin(), n.end(), simple_key_char)) continue; // cannot collide
    key_trie* t = &root;
    for (char c : n) t = &t->children[c];
    t->terminal = true;
  }
  byte_set all;
  all.set_range('a', 'z'), all.set_range('A', 'Z'), all.set_range('0', '9'), all.set('_'), all.set('-');
  const expr_id quote = g_.literal("\"");
  // At a trie node: end here (unless a name ends here), leave the trie with a
  // byte no name continues with, or follow a name's next byte.
  auto build = [&](auto&& self, const key_trie& t, bool at_root) -> expr_id {
    std::vector<expr_id> alts;
    if (!at_root && !t.terminal) alts.push_back(quote);
    byte_set other = all;
    for (const auto& [c, child] : t.children) other.bits[uint8_t(c) >> 6] &= ~(uint64_t{1} << (uint8_t(c) & 63));
    if (!other.empty()) alts.push_back(g_.seq({g_.bytes(other), g_.star(g_.bytes(all)), quote}));
    for (const auto& [c, child] : t.children) alts.push_back(g_.seq({g_.literal(std::string(1, c)), self(self, child, false)}));
    return g_.alt(std::move(alts));
  };
  return g_.seq({quote, build(build, root, true)});
}

std::optional<std::string_view> json_blocks::format_regex(std::string_view f) {
#define DYNAMO_DATE "[1-9][0-9]{3}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
#define DYNAMO_TIME "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
  if (f == "date") return DYNAMO_DATE;
  if (f == "time") return DYNAMO_TIME;
  if (f == "date-time") return DYNAMO_DATE "T" DYNAMO_TIME;
#undef DYNAMO_DATE
#undef DYNAMO_TIME
  if (f == "uuid") return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  if (f == "email")
    return "[A-Za-z0-9](?:[A-Za-z0-9._+-]{0,30}[A-Za-z0-9])?@[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?(?:\\.[A-Za-z]{2,10}){1,3}";
  if (f == "ipv4") return "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  return std::nullopt;
}

expr_id json_blocks::same_length(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return g_.empty();
  if (lo == hi) return g_.literal(lo);
  const size_t n = lo.size() - 1;
  const std::string lt = lo.substr(1), ht = hi.substr(1);
  if (lo[0] == hi[0]) return g_.seq({g_.literal(lo.substr(0, 1)), same_length(lt, ht)});
  if (lt == std::string(n, '0') && ht == std::string(n, '9'))
    return g_.seq({g_.byte_range(uint8_t(lo[0]), uint8_t(hi[0])), g_.repeat(digits(), uint32_t(n), uint32_t(n))});
  std::vector<expr_id> alts;
  alts.push_back(g_.seq({g_.literal(lo.substr(0, 1)), same_length(lt, std::string(n, '9'))}));
  if (hi[0] - lo[0] >= 2)
    alts.push_back(g_.seq({g_.byte_range(uint8_t(lo[0] + 1), uint8_t(hi[0] - 1)), g_.repeat(digits(), uint32_t(n), uint32_t(n))}));
  alts.push_back(g_.seq({g_.literal(hi.substr(0, 1)), same_length(std::string(n, '0'), ht)}));
  return g_.alt(std::move(alts));
}

expr_id json_blocks::nonneg_range(uint64_t lo, uint64_t hi) {
  std::vector<expr_id> alts;
  uint64_t pow = 1; // 10^(len-1)
  for (size_t len = 1; len <= 20 && lo <= hi; ++len, pow *= 10) {
    const uint64_t top = len >= 20 ? UINT64_MAX : pow * 10 - 1;
    const uint64_t a = std::max(lo, len == 1 ? uint64_t{0} : pow), b = std::min(hi, top);
    if (a <= b) alts.push_back(same_length(std::to_string(a), std::to_string(b)));
    if (hi <= top) break;
  }
  return g_.alt(std::move(alts));
}

expr_id json_blocks::int_range(int64_t lo, int64_t hi) {
  std::vector<expr_id> alts;
  if (lo < 0) {
    const int64_t nlo = hi < 0 ? -hi : 1, nhi = -lo;
    alts.push_back(g_.seq({g_.literal("-"), nonneg_range(uint64_t(nlo), uint64_t(nhi))}));
  }
  if (hi >= 0) alts.push_back(nonneg_range(uint64_t(std::max<int64_t>(lo, 0)), uint64_t(hi)));
  return g_.alt(std::move(alts));
}

} // namespace dynamo::gram::detail
