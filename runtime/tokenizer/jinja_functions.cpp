// Tests, global functions and methods of the Jinja subset, and the Python
// string operations they share with the filters (jinja_filters.cpp).
#include "runtime/tokenizer/jinja_builtins.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace dynamo::tok::jinja {

namespace text {

bool is_python_space(char32_t cp) noexcept {
  return (cp >= 0x1C && cp <= 0x1F) || (cp <= 0x10FFFF && char_info_of(cp).space);
}

std::string strip(const std::string& s, bool left, bool right, const std::string* chars) {
  // Both the string and `chars` are sequences of code points.
  std::vector<std::pair<size_t, size_t>> cps; // offset, length
  for (size_t i = 0; i < s.size();) {
    const auto c = decode_utf8(s, i);
    cps.emplace_back(i, c.len);
    i += c.len;
  }
  auto strippable = [&](size_t k) {
    const std::string_view c(s.data() + cps[k].first, cps[k].second);
    if (!chars)
      return is_python_space(decode_utf8(c, 0).cp);
    for (size_t i = 0; i < chars->size();) {
      const auto d = decode_utf8(*chars, i);
      if (std::string_view(chars->data() + i, d.len) == c)
        return true;
      i += d.len;
    }
    return false;
  };
  size_t b = 0, e = cps.size();
  while (left && b < e && strippable(b))
    ++b;
  while (right && e > b && strippable(e - 1))
    --e;
  if (b == e)
    return {};
  return s.substr(cps[b].first, cps[e - 1].first + cps[e - 1].second - cps[b].first);
}

std::string change_case(std::string s, bool upper) {
  for (auto& c : s)
    if (static_cast<unsigned char>(c) < 0x80)
      c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                  : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string title_case(std::string s, bool every_word) {
  bool start = true;
  for (auto& c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && std::isalpha(u)) {
      c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
      start = false;
    } else if (every_word) {
      start = !(u < 0x80 && std::isalnum(u));
    }
  }
  return s;
}

expected<std::string> replace_all(const std::string& s, const std::string& from, const std::string& to, int line) {
  if (from.empty())
    return s;
  size_t hits = 0;
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += from.size())
    ++hits;
  if (to.size() > from.size() && hits > (max_string_bytes - s.size()) / (to.size() - from.size()))
    return fail(line, "replace: result over " + std::to_string(max_string_bytes) + " bytes");
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size())
    out.append(s, pos, hit - pos).append(to);
  return out.append(s, pos, std::string::npos);
}

namespace {
caf::error join_too_long(int line) {
  return fail(line, "join: result over " + std::to_string(max_string_bytes) + " bytes");
}
} // namespace

expected<void> join_append(std::string& out, bool first, const std::string& sep, const std::string& item,
                           int line) {
  if (out.size() + (first ? 0 : sep.size()) + item.size() > max_string_bytes)
    return join_too_long(line);
  out.append(first ? std::string() : sep).append(item);
  return {};
}

expected<std::string> join_characters(const std::string& s, const std::string& sep, int line) {
  const size_t n = count_code_points(s);
  if (n > 1 && (n - 1 > max_string_bytes / std::max<size_t>(sep.size(), 1) ||
                s.size() + (n - 1) * sep.size() > max_string_bytes))
    return join_too_long(line);
  std::string out;
  out.reserve(s.size() + (n > 1 ? (n - 1) * sep.size() : 0));
  for (size_t i = 0; i < s.size();) {
    const uint32_t len = decode_utf8(s, i).len;
    if (i > 0)
      out.append(sep);
    out.append(s, i, len);
    i += len;
  }
  return out;
}

value first_character(const std::string& s) {
  return s.empty() ? value() : value(s.substr(0, decode_utf8(s, 0).len));
}

value last_character(const std::string& s) {
  if (s.empty())
    return value();
  size_t last = 0;
  for (size_t i = 0; i < s.size(); i += decode_utf8(s, i).len)
    last = i;
  return value(s.substr(last));
}

size_t count_code_points(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += decode_utf8(s, i).len)
    ++n;
  return n;
}

} // namespace text

namespace {

const std::string* string_arg(const std::vector<value>& args, size_t i) {
  return i < args.size() ? args[i].as_string() : nullptr;
}

// str.split(sep=None, maxsplit=-1); stops past max_list_items parts (the caller fails).
list split(const std::string& s, const std::string* sep, int64_t maxsplit) {
  list parts;
  if (!sep) { // runs of whitespace; no empty parts
    size_t i = 0;
    auto space_at = [&](size_t k) { return text::is_python_space(decode_utf8(s, k).cp); };
    while (i < s.size() && parts.size() <= max_list_items) {
      while (i < s.size() && space_at(i))
        i += decode_utf8(s, i).len;
      if (i >= s.size())
        break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.emplace_back(s.substr(i)); // the rest, trailing whitespace kept
        break;
      }
      size_t j = i;
      while (j < s.size() && !space_at(j))
        j += decode_utf8(s, j).len;
      parts.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t pos = 0;
  for (size_t hit; (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) &&
                   parts.size() <= max_list_items && (hit = s.find(*sep, pos)) != std::string::npos;
       pos = hit + sep->size())
    parts.emplace_back(s.substr(pos, hit - pos));
  parts.emplace_back(s.substr(pos));
  return parts;
}

expected<value> string_method(const std::string& s, std::string_view name, const std::vector<value>& args, int line) {
  const std::string* a0 = string_arg(args, 0);
  const bool none0 = args.empty() || args[0].is_none();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    if (!none0 && !a0)
      return fail(line, std::string(name) + " arg must be None or str");
    return value(text::strip(s, name != "rstrip", name != "lstrip", none0 ? nullptr : a0));
  }
  if (name == "upper" || name == "lower")
    return value(text::change_case(s, name == "upper"));
  if (name == "title" || name == "capitalize")
    return value(text::title_case(name == "title" ? s : text::change_case(s, false), name == "title"));
  if (name == "startswith" || name == "endswith") {
    std::vector<std::string> options; // a string or a tuple (list) of strings
    if (a0)
      options.push_back(*a0);
    else if (auto l = args.empty() ? nullptr : args[0].as_list())
      for (const auto& x : *l)
        if (auto xs = x.as_string())
          options.push_back(*xs);
    if (options.empty() && !a0)
      return fail(line, std::string(name) + " first arg must be str or a tuple of str");
    const bool hit = std::any_of(options.begin(), options.end(), [&](const std::string& o) {
      return name == "startswith" ? s.starts_with(o) : s.ends_with(o);
    });
    return value(hit);
  }
  if (name == "replace" && a0 && string_arg(args, 1)) {
    auto r = text::replace_all(s, *a0, *string_arg(args, 1), line);
    return r ? value(std::move(*r)) : expected<value>(std::move(r.error()));
  }
  if (name == "split") {
    if (!none0 && !a0)
      return fail(line, "split: separator must be None or str");
    if (a0 && a0->empty())
      return fail(line, "empty separator");
    int64_t maxsplit = -1;
    if (args.size() > 1)
      if (auto m = std::get_if<int64_t>(&args[1].v))
        maxsplit = *m;
    auto parts = split(s, none0 ? nullptr : a0, maxsplit);
    if (parts.size() > max_list_items)
      return fail(line, "split: more than " + std::to_string(max_list_items) + " parts");
    return value(std::move(parts));
  }
  if ((name == "find" || name == "count") && a0) {
    if (name == "find") {
      const size_t hit = s.find(*a0);
      return value(hit == std::string::npos ? int64_t{-1}
                                            : static_cast<int64_t>(text::count_code_points(s.substr(0, hit))));
    }
    int64_t n = 0;
    for (size_t pos = 0; a0->size() && (pos = s.find(*a0, pos)) != std::string::npos; pos += a0->size())
      ++n;
    return value(a0->empty() ? static_cast<int64_t>(text::count_code_points(s)) + 1 : n);
  }
  if (name == "join" && !args.empty()) {
    std::string out;
    const list* l = args[0].as_list();
    if (!l)
      return fail(line, "join() takes a list");
    for (size_t i = 0; i < l->size(); ++i) {
      const std::string* item = (*l)[i].as_string();
      if (!item)
        return fail(line, "sequence item " + std::to_string(i) + ": expected str instance");
      if (auto ok = text::join_append(out, i == 0, s, *item, line); !ok)
        return std::move(ok.error());
    }
    return value(std::move(out));
  }
  return fail(line, "unknown string method '" + std::string(name) + "' (or wrong arguments)");
}

expected<value> dict_method(const dict& d, const value& self, std::string_view name, const std::vector<value>& args,
                            int line) {
  if (name == "get" && !args.empty()) {
    const std::string* k = string_arg(args, 0);
    value v = k ? self.get(*k) : value();
    if (v.is_undefined())
      return args.size() > 1 ? args[1] : value(none{});
    return v;
  }
  if (name == "items" && nested_deeper_than(self, max_nesting - 1))
    return fail(line, "items(): values nested more than " + std::to_string(max_nesting) + " deep");
  if (name == "items" || name == "keys" || name == "values") {
    list out;
    for (const auto& [k, v] : d) {
      if (name == "items")
        out.emplace_back(list{value(k), v});
      else if (name == "keys")
        out.emplace_back(k);
      else
        out.push_back(v);
    }
    return value(std::move(out));
  }
  return fail(line, "unknown dict method '" + std::string(name) + "'");
}

bool to_number(const value& v, double& out) {
  if (auto i = std::get_if<int64_t>(&v.v))
    out = static_cast<double>(*i);
  else if (auto d = std::get_if<double>(&v.v))
    out = *d;
  else if (auto b = std::get_if<bool>(&v.v))
    out = *b;
  else
    return false;
  return true;
}

// Python's strftime over the broken-down time (the C library's, in the "C" locale).
std::string strftime_of(const std::string& format, const std::tm& t) {
  if (format.empty())
    return {};
  std::vector<char> buf(format.size() * 8 + 64);
  for (int tries = 0; tries < 8; ++tries, buf.resize(buf.size() * 4)) {
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &t);
    if (n > 0)
      return std::string(buf.data(), n);
  }
  return {};
}

} // namespace

expected<bool> apply_test(std::string_view name, const value& v, const std::vector<value>& args, int line) {
  const auto* i = std::get_if<int64_t>(&v.v);
  const auto* b = std::get_if<bool>(&v.v);
  auto need = [&](size_t n) -> expected<void> {
    if (args.size() < n)
      return fail(line, "test '" + std::string(name) + "' takes " + std::to_string(n) + " argument(s)");
    return {};
  };
  if (name == "defined" || name == "undefined")
    return v.is_undefined() == (name == "undefined");
  if (name == "none")
    return v.is_none();
  if (name == "string")
    return v.is_string();
  if (name == "number")
    return v.is_number() || b;
  if (name == "integer")
    return i != nullptr;
  if (name == "float")
    return std::holds_alternative<double>(v.v);
  if (name == "boolean")
    return b != nullptr;
  if (name == "true" || name == "false")
    return b && *b == (name == "true");
  if (name == "mapping")
    return v.as_dict() != nullptr;
  if (name == "iterable" || name == "sequence")
    return v.as_list() || v.as_dict() || v.is_string() || v.is_undefined();
  if (name == "callable")
    return v.as_function() != nullptr;
  if (name == "even" || name == "odd") {
    double x = 0;
    if (!to_number(v, x))
      return fail(line, "test '" + std::string(name) + "' needs a number");
    return (std::fmod(std::fabs(x), 2.0) == 0) == (name == "even");
  }
  if (name == "lower" || name == "upper") {
    const std::string s = v.to_output();
    return s == text::change_case(s, name == "upper") && s != text::change_case(s, name != "upper");
  }
  if (name == "divisibleby") {
    if (auto ok = need(1); !ok)
      return std::move(ok.error());
    double x = 0, y = 0;
    if (!to_number(v, x) || !to_number(args[0], y) || y == 0)
      return fail(line, "divisibleby needs numbers (and a non-zero divisor)");
    return std::fmod(x, y) == 0;
  }
  if (name == "sameas") {
    if (auto ok = need(1); !ok)
      return std::move(ok.error());
    // Python `is`: the singletons None/True/False, the same container, equal scalars otherwise.
    const value& w = args[0];
    if (v.as_list() || w.as_list())
      return v.as_list() == w.as_list();
    if (v.as_dict() || w.as_dict())
      return v.as_dict() == w.as_dict();
    return v.v.index() == w.v.index() && equals(v, w);
  }
  static constexpr std::pair<std::string_view, std::string_view> compare_tests[] = {
      {"equalto", "=="}, {"eq", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="}, {"lt", "<"}, {"lessthan", "<"},
      {"<", "<"}, {"le", "<="}, {"<=", "<="}, {"gt", ">"}, {"greaterthan", ">"}, {">", ">"}, {"ge", ">="},
      {">=", ">="}, {"in", "in"}};
  for (auto [test, op] : compare_tests) {
    if (name != test)
      continue;
    if (auto ok = need(1); !ok)
      return std::move(ok.error());
    auto r = binary_op(op, v, args[0], line);
    if (!r)
      return std::move(r.error());
    return r->truthy();
  }
  return fail(line, "unknown test '" + std::string(name) + "'");
}

expected<value> call_method(const value& self, std::string_view name, const std::vector<value>& args, int line) {
  if (auto s = self.as_string())
    return string_method(*s, name, args, line);
  if (auto d = self.as_dict())
    return dict_method(*d, self, name, args, line);
  if (self.is_undefined())
    return fail(line, "undefined value has no method '" + std::string(name) + "'");
  return fail(line, "'" + std::string(self.type_name()) + "' has no method '" + std::string(name) + "'");
}

const std::vector<std::string_view>& global_function_names() {
  static const std::vector<std::string_view> names = {"raise_exception", "strftime_now", "namespace", "dict", "range"};
  return names;
}

expected<value> call_function(std::string_view name, const std::vector<value>& args,
                              const std::vector<std::string>& names, int line, const std::optional<std::tm>& now) {
  if (name == "raise_exception")
    return make_error(errc::invalid_argument,
                      "chat template: " + (args.empty() ? std::string("raise_exception()") : args[0].to_output()));
  if (name == "strftime_now") {
    const std::string* format = string_arg(args, 0);
    if (!format)
      return fail(line, "strftime_now() takes a format string");
    std::tm t{};
    if (now) {
      t = *now;
    } else {
      const std::time_t secs = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      localtime_r(&secs, &t);
    }
    return value(strftime_of(*format, t));
  }
  if (name == "namespace" || name == "dict") {
    dict d;
    for (size_t i = 0; i < args.size(); ++i) {
      if (names[i].empty())
        return fail(line, std::string(name) + "() takes keyword arguments only");
      d.emplace_back(names[i], args[i]);
    }
    return value(std::move(d));
  }
  if (name == "range") {
    int64_t a = 0, b = 0, step = 1;
    auto get = [&](size_t k, int64_t& out) {
      auto p = std::get_if<int64_t>(&args[k].v);
      return p && ((out = *p), true);
    };
    const bool ok = (args.size() == 1 && get(0, b)) || (args.size() == 2 && get(0, a) && get(1, b)) ||
                    (args.size() == 3 && get(0, a) && get(1, b) && get(2, step) && step != 0);
    if (!ok)
      return fail(line, "range() takes 1 to 3 integers (non-zero step)");
    list out;
    for (int64_t x = a; step > 0 ? x < b : x > b; x += step) {
      if (out.size() >= max_list_items)
        return fail(line, "range() too large");
      out.emplace_back(x);
    }
    return value(std::move(out));
  }
  return fail(line, "unknown function '" + std::string(name) + "'");
}

} // namespace dynamo::tok::jinja
