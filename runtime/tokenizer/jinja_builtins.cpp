#include "runtime/tokenizer/jinja_builtins.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace dynamo::tok::jinja {

namespace {

const int64_t* as_int(const value& v) { return std::get_if<int64_t>(&v.v); }

// Integers (and bools, as in Python) as int64.
bool to_int(const value& v, int64_t& out) {
  if (auto i = as_int(v)) {
    out = *i;
    return true;
  }
  if (auto b = std::get_if<bool>(&v.v)) {
    out = *b;
    return true;
  }
  return false;
}

bool to_double(const value& v, double& out) {
  int64_t i = 0;
  if (to_int(v, i)) {
    out = static_cast<double>(i);
    return true;
  }
  if (auto d = std::get_if<double>(&v.v)) {
    out = *d;
    return true;
  }
  return false;
}

caf::error type_error(int line, std::string_view op, const value& a, const value& b) {
  return fail(line, "unsupported operand types for " + std::string(op) + ": '" + std::string(a.type_name()) +
                        "' and '" + std::string(b.type_name()) + "'");
}

// Where each code point of `s` starts, then s.size() (strings a template
// sees are under 4 GiB: request bodies and max_string_bytes bound them).
std::vector<uint32_t> code_point_starts(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size(); i += decode_utf8(s, i).len)
    out.push_back(static_cast<uint32_t>(i));
  out.push_back(static_cast<uint32_t>(s.size()));
  return out;
}

// Python's `needle in haystack` (TypeError for None, numbers, and non-string
// needles in strings; an undefined haystack is empty).
expected<bool> contains(const value& haystack, const value& needle, int line) {
  if (auto s = haystack.as_string()) {
    auto n = needle.as_string();
    if (!n)
      return fail(line, "'in <string>' requires string as left operand, not " + std::string(needle.type_name()));
    return s->find(*n) != std::string::npos;
  }
  if (auto l = haystack.as_list())
    return std::any_of(l->begin(), l->end(), [&](const value& x) { return equals(x, needle); });
  if (auto d = haystack.as_dict()) {
    auto n = needle.as_string();
    return n && std::any_of(d->begin(), d->end(), [&](const auto& kv) { return kv.first == *n; });
  }
  if (haystack.is_undefined())
    return false;
  return fail(line, "argument of type '" + std::string(haystack.type_name()) + "' is not iterable");
}

expected<value> arithmetic(std::string_view op, const value& a, const value& b, int line) {
  int64_t x = 0, y = 0;
  if (to_int(a, x) && to_int(b, y)) {
    int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(x, y, &r))
      return value(r);
    if (op == "-" && !__builtin_sub_overflow(x, y, &r))
      return value(r);
    if (op == "*" && !__builtin_mul_overflow(x, y, &r))
      return value(r);
    if ((op == "//" || op == "%") && y == 0)
      return fail(line, "division by zero");
    if ((op == "//" || op == "%") && x == INT64_MIN && y == -1)
      return fail(line, "integer overflow in " + std::string(op));
    if (op == "//")
      return value(x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0));
    if (op == "%")
      return value(((x % y) + y) % y);
    if (op != "/")
      return fail(line, "integer overflow in " + std::string(op));
  }
  double p = 0, q = 0;
  if (!to_double(a, p) || !to_double(b, q))
    return type_error(line, op, a, b);
  if (op == "+")
    return value(p + q);
  if (op == "-")
    return value(p - q);
  if (op == "*")
    return value(p * q);
  if (q == 0)
    return fail(line, "division by zero");
  if (op == "/")
    return value(p / q);
  if (op == "//")
    return value(std::floor(p / q));
  return value(p - q * std::floor(p / q));
}

expected<value> compare(std::string_view op, const value& a, const value& b, int line) {
  int c = 0;
  double p = 0, q = 0;
  if (to_double(a, p) && to_double(b, q))
    c = p < q ? -1 : p > q ? 1 : 0;
  else if (a.as_string() && b.as_string())
    c = a.as_string()->compare(*b.as_string());
  else
    return type_error(line, op, a, b);
  if (op == "<")
    return value(c < 0);
  if (op == ">")
    return value(c > 0);
  if (op == "<=")
    return value(c <= 0);
  return value(c >= 0);
}

expected<value> repeat(const value& seq, const value& times, int line) {
  int64_t n = 0;
  if (!to_int(times, n))
    return type_error(line, "*", seq, times);
  n = std::max<int64_t>(n, 0);
  if (auto s = seq.as_string()) {
    if (n > 0 && s->size() > max_string_bytes / static_cast<size_t>(n))
      return fail(line, "string repetition too large");
    std::string out;
    for (int64_t i = 0; i < n; ++i)
      out += *s;
    return value(std::move(out));
  }
  const list& l = *seq.as_list();
  if (n > 0 && l.size() > max_list_items / static_cast<size_t>(n))
    return fail(line, "list repetition too large");
  list out;
  for (int64_t i = 0; i < n; ++i)
    out.insert(out.end(), l.begin(), l.end());
  return value(std::move(out));
}

} // namespace

caf::error fail(int line, const std::string& what) {
  return make_error(errc::invalid_argument, "chat template line " + std::to_string(line) + ": " + what);
}

expected<std::vector<value>> iterate(const value& v, int line) {
  if (v.is_undefined())
    return std::vector<value>{};
  if (auto l = v.as_list())
    return *l;
  if (auto d = v.as_dict()) {
    std::vector<value> keys;
    for (const auto& [k, x] : *d)
      keys.emplace_back(k);
    return keys;
  }
  if (auto s = v.as_string()) {
    const size_t n = text::count_code_points(*s);
    if (n > max_list_items)
      return fail(line, "cannot iterate over a string of more than " + std::to_string(max_list_items) + " characters");
    static const std::array<value, 128> ascii = [] {
      std::array<value, 128> t;
      for (size_t c = 0; c < t.size(); ++c)
        t[c] = value(std::string(1, static_cast<char>(c)));
      return t;
    }();
    std::vector<value> chars;
    chars.reserve(n);
    for (size_t i = 0; i < s->size();) {
      const uint32_t len = decode_utf8(*s, i).len;
      const auto c = static_cast<unsigned char>((*s)[i]);
      if (len == 1 && c < ascii.size())
        chars.push_back(ascii[c]);
      else
        chars.emplace_back(s->substr(i, len));
      i += len;
    }
    return chars;
  }
  return fail(line, "'" + std::string(v.type_name()) + "' is not iterable");
}

expected<value> binary_op(std::string_view op, const value& a, const value& b, int line) {
  if (op == "~") {
    std::string out = a.to_output();
    const std::string rhs = b.to_output();
    if (out.size() + rhs.size() > max_string_bytes)
      return fail(line, "string too large");
    return value(out + rhs);
  }
  if (op == "==")
    return value(equals(a, b));
  if (op == "!=")
    return value(!equals(a, b));
  if (op == "in" || op == "not in") {
    auto hit = contains(b, a, line);
    if (!hit)
      return std::move(hit.error());
    return value(*hit == (op == "in"));
  }
  if (op == "<" || op == ">" || op == "<=" || op == ">=")
    return compare(op, a, b, line);
  if (op == "+") {
    const size_t na = a.as_string() ? a.as_string()->size() : a.as_list() ? a.as_list()->size() : 0;
    const size_t nb = b.as_string() ? b.as_string()->size() : b.as_list() ? b.as_list()->size() : 0;
    if (na + nb > (a.as_list() ? max_list_items : max_string_bytes))
      return fail(line, "string or list too large");
    if (a.as_string() && b.as_string())
      return value(*a.as_string() + *b.as_string());
    if (a.as_list() && b.as_list()) {
      list out = *a.as_list();
      out.insert(out.end(), b.as_list()->begin(), b.as_list()->end());
      return value(std::move(out));
    }
  }
  if (op == "*" && (a.as_string() || a.as_list()))
    return repeat(a, b, line);
  if (op == "*" && (b.as_string() || b.as_list()))
    return repeat(b, a, line);
  if (op == "%" && a.as_string())
    return fail(line, "string formatting with '%' is not supported");
  return arithmetic(op, a, b, line);
}

expected<value> negate_number(const value& v, bool negate, int line) {
  int64_t i = 0;
  double d = 0;
  if (to_int(v, i) && i != INT64_MIN)
    return value(negate ? -i : i);
  if (to_double(v, d))
    return value(negate ? -d : d);
  return fail(line, "bad operand type for unary " + std::string(negate ? "-" : "+") + ": '" +
                        std::string(v.type_name()) + "'");
}

value index_value(const value& obj, const value& key) {
  if (auto s = key.as_string())
    return obj.get(*s);
  int64_t i = 0;
  if (!to_int(key, i))
    return {};
  if (auto l = obj.as_list()) {
    const auto n = static_cast<int64_t>(l->size());
    if (i < 0)
      i += n;
    return i < 0 || i >= n ? value() : (*l)[static_cast<size_t>(i)];
  }
  if (auto s = obj.as_string()) { // walks to the character: no copy of the string's code points
    if (i < 0)
      i += static_cast<int64_t>(text::count_code_points(*s));
    size_t at = 0;
    for (int64_t k = 0; k < i && at < s->size(); ++k)
      at += decode_utf8(*s, at).len;
    if (i < 0 || at >= s->size())
      return {};
    return value(s->substr(at, decode_utf8(*s, at).len));
  }
  return {};
}

expected<value> slice_value(const value& obj, const value& start, const value& stop, const value& step, int line) {
  const list* items = obj.as_list();
  const std::string* str = obj.as_string();
  if (!items && !str)
    return fail(line, "cannot slice '" + std::string(obj.type_name()) + "'");
  const auto starts = str ? code_point_starts(*str) : std::vector<uint32_t>{};
  const auto n = static_cast<int64_t>(str ? starts.size() - 1 : items->size());
  int64_t st = 1;
  if (!step.is_undefined() && !step.is_none() && (!to_int(step, st) || st == 0))
    return fail(line, "slice step must be a non-zero integer");
  auto bound = [&](const value& v, int64_t dflt) -> expected<int64_t> {
    int64_t x = 0;
    if (v.is_undefined() || v.is_none())
      return dflt;
    if (!to_int(v, x))
      return fail(line, "slice indices must be integers");
    if (x < 0)
      x += n;
    return st > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  auto b = bound(start, st > 0 ? 0 : n - 1);
  auto e = bound(stop, st > 0 ? n : -1);
  if (!b || !e)
    return std::move((!b ? b : e).error());
  if (items) {
    list out;
    for (int64_t i = *b; st > 0 ? i < *e : i > *e; i += st)
      out.push_back((*items)[static_cast<size_t>(i)]);
    return value(std::move(out));
  }
  std::string out;
  for (int64_t i = *b; st > 0 ? i < *e : i > *e; i += st) {
    const auto k = static_cast<size_t>(i);
    out.append(*str, starts[k], starts[k + 1] - starts[k]);
  }
  return value(std::move(out));
}

} // namespace dynamo::tok::jinja
