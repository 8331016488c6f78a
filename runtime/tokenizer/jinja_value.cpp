#include "runtime/tokenizer/jinja_value.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dynamo::tok::jinja {

std::string format_double(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  if (d == 0)
    return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest digits that read back the same, then Python's layout:
  // positional for decimal exponents -4 <= e < 16, else d.ddde+XX.
  char buf[40];
  int prec = 1;
  for (; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
  std::string sci = buf;
  const size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c >= '0' && c <= '9')
      digits += c;
  const std::string sign = d < 0 ? "-" : "";
  if (exp < -4 || exp >= 16) {
    std::string m = digits.substr(0, 1);
    if (digits.size() > 1)
      m += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return sign + m + ebuf;
  }
  if (exp < 0)
    return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  const auto int_len = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_len)
    return sign + digits + std::string(int_len - digits.size(), '0') + ".0";
  return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string python_quote(std::string_view s) {
  const char q = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    const auto c = decode_utf8(s, i);
    const char32_t cp = c.cp;
    char buf[16];
    if (cp == static_cast<char32_t>(q) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == invalid_cp) { // not UTF-8 (Python strings cannot hold it): keep the byte
      out += s[i];
    } else if (const auto cat = char_info_of(cp).cat;
               cp != ' ' && (cat == unicode_category::control || cat == unicode_category::separator ||
                             cat == unicode_category::undefined)) {
      if (cp < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      else if (cp < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, c.len));
    }
    i += c.len;
  }
  return out + q;
}

bool value::is_number() const noexcept {
  return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
}

const list* value::as_list() const noexcept {
  auto p = std::get_if<std::shared_ptr<list>>(&v);
  return p ? p->get() : nullptr;
}

dict* value::as_dict() const noexcept {
  auto p = std::get_if<std::shared_ptr<dict>>(&v);
  return p ? p->get() : nullptr;
}

bool value::truthy() const noexcept {
  struct visitor {
    bool operator()(undefined) const { return false; }
    bool operator()(none) const { return false; }
    bool operator()(bool b) const { return b; }
    bool operator()(int64_t i) const { return i != 0; }
    bool operator()(double d) const { return d != 0.0; }
    bool operator()(const value::shared_string& s) const { return !s->empty(); }
    bool operator()(const std::shared_ptr<list>& l) const { return !l->empty(); }
    bool operator()(const std::shared_ptr<dict>& d) const { return !d->empty(); }
    bool operator()(const function_ref&) const { return true; }
  };
  return std::visit(visitor{}, v);
}

namespace {

// Appends the printed form of `v` to `out`; strings are quoted when `quoted`.
void print(const value& v, bool quoted, int depth, std::string& out) {
  if (out.size() > max_print_bytes)
    return;
  if (auto s = v.as_string()) {
    out += quoted ? python_quote(*s) : *s;
    return;
  }
  const list* l = v.as_list();
  const dict* d = v.as_dict();
  if ((l || d) && depth >= max_print_depth) {
    out += "...";
    return;
  }
  if (l) {
    out += '[';
    for (size_t i = 0; i < l->size() && out.size() <= max_print_bytes; ++i) {
      out += i ? ", " : "";
      print((*l)[i], true, depth + 1, out);
    }
    out += ']';
    return;
  }
  if (d) {
    out += '{';
    for (size_t i = 0; i < d->size() && out.size() <= max_print_bytes; ++i) {
      out += (i ? ", " : "") + python_quote((*d)[i].first) + ": ";
      print((*d)[i].second, true, depth + 1, out);
    }
    out += '}';
    return;
  }
  struct scalar {
    std::string operator()(undefined) const { return {}; }
    std::string operator()(none) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double x) const { return format_double(x); }
    std::string operator()(const value::shared_string& x) const { return *x; }
    std::string operator()(const std::shared_ptr<list>&) const { return {}; }
    std::string operator()(const std::shared_ptr<dict>&) const { return {}; }
    std::string operator()(const function_ref& f) const { return "<function " + f.name + ">"; }
  };
  out += std::visit(scalar{}, v.v);
}

} // namespace

std::string value::repr() const {
  std::string out;
  print(*this, true, 0, out);
  return out;
}

std::string value::to_output() const {
  std::string out;
  print(*this, false, 0, out);
  return out;
}

std::string_view value::type_name() const noexcept {
  static constexpr std::string_view names[] = {"undefined", "none", "bool",  "int",     "float",
                                               "string",    "list", "dict", "function"};
  return names[v.index()];
}

value value::get(std::string_view key) const {
  if (auto d = as_dict())
    for (const auto& [k, val] : *d)
      if (k == key)
        return val;
  return {};
}

namespace {

bool equals_within(const value& a, const value& b, size_t& budget, int depth) {
  if (budget == 0 || depth > max_print_depth)
    return false;
  --budget;
  auto num = [](const value& x, double& out) {
    if (auto i = std::get_if<int64_t>(&x.v))
      out = static_cast<double>(*i);
    else if (auto d = std::get_if<double>(&x.v))
      out = *d;
    else if (auto b = std::get_if<bool>(&x.v))
      out = *b ? 1.0 : 0.0;
    else
      return false;
    return true;
  };
  double x = 0, y = 0;
  if (num(a, x) && num(b, y))
    return x == y;
  if (a.v.index() != b.v.index())
    return false;
  if (auto s = a.as_string())
    return *s == *b.as_string();
  if (auto l = a.as_list()) {
    const auto* m = b.as_list();
    if (l == m)
      return true;
    if (l->size() != m->size())
      return false;
    for (size_t i = 0; i < l->size(); ++i)
      if (!equals_within((*l)[i], (*m)[i], budget, depth + 1))
        return false;
    return true;
  }
  if (auto d = a.as_dict()) {
    const auto* e = b.as_dict();
    if (d == e)
      return true;
    if (d->size() != e->size())
      return false;
    for (const auto& [k, val] : *d)
      if (!equals_within(val, b.get(k), budget, depth + 1))
        return false;
    return true;
  }
  if (auto f = a.as_function())
    return f->name == b.as_function()->name;
  return true; // undefined == undefined, none == none
}

} // namespace

bool equals(const value& a, const value& b) {
  size_t budget = 1'000'000;
  return equals_within(a, b, budget, 0);
}

namespace {

bool deeper_within(const value& v, int limit, size_t& budget) {
  const list* l = v.as_list();
  const dict* d = v.as_dict();
  if (!l && !d)
    return false;
  if (limit <= 0 || budget == 0)
    return true;
  --budget;
  if (l)
    return std::any_of(l->begin(), l->end(), [&](const value& x) { return deeper_within(x, limit - 1, budget); });
  return std::any_of(d->begin(), d->end(),
                     [&](const auto& kv) { return deeper_within(kv.second, limit - 1, budget); });
}

} // namespace

namespace {

bool holds_within(const value& v, const dict* target, int limit, size_t& budget) {
  const list* l = v.as_list();
  const dict* d = v.as_dict();
  if (d == target && d)
    return true;
  if ((!l && !d) || limit <= 0 || budget == 0)
    return false;
  --budget;
  if (l)
    return std::any_of(l->begin(), l->end(), [&](const value& x) { return holds_within(x, target, limit - 1, budget); });
  return std::any_of(d->begin(), d->end(),
                     [&](const auto& kv) { return holds_within(kv.second, target, limit - 1, budget); });
}

} // namespace

bool holds(const value& v, const dict* target) {
  size_t budget = 1'000'000;
  return holds_within(v, target, max_nesting, budget);
}

bool nested_deeper_than(const value& v, int limit) {
  size_t budget = 1'000'000; // containers visited; more counts as too deep (shared or cyclic graphs)
  return deeper_within(v, limit, budget);
}

} // namespace dynamo::tok::jinja
