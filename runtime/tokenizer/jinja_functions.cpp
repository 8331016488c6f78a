// Filters, tests, global functions and methods of the Jinja subset.
#include "runtime/tokenizer/jinja_builtins.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace dynamo::tok::jinja {

namespace {

constexpr std::string_view blanks = " \t\n\r\v\f";
constexpr int64_t max_range = 1 << 20;

size_t count_code_points(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += decode_utf8(s, i).len)
    ++n;
  return n;
}

std::string strip(const std::string& s, bool left, bool right, std::string_view chars) {
  size_t b = 0, e = s.size();
  while (left && b < e && chars.find(s[b]) != std::string_view::npos)
    ++b;
  while (right && e > b && chars.find(s[e - 1]) != std::string_view::npos)
    --e;
  return s.substr(b, e - b);
}

std::string ascii_case(std::string s, bool upper) {
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

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  if (from.empty())
    return s;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size())
    out.append(s, pos, hit - pos).append(to);
  return out.append(s, pos, std::string::npos);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c; // json.dumps(ensure_ascii=False), as HF's tojson
        }
    }
  }
  return out + "\"";
}

// json.dumps with the default separators (", ", ": "); depth and size capped
// like value::to_output (cyclic namespaces).
void to_json(const value& v, int depth, std::string& out) {
  if (out.size() > max_print_bytes)
    return;
  const list* l = v.as_list();
  const dict* d = v.as_dict();
  if ((l || d) && depth >= max_print_depth) {
    out += "null";
    return;
  }
  if (auto s = v.as_string()) {
    out += json_string(*s);
  } else if (v.is_undefined() || v.is_none()) {
    out += "null";
  } else if (auto b = std::get_if<bool>(&v.v)) {
    out += *b ? "true" : "false";
  } else if (l) {
    out += '[';
    for (size_t i = 0; i < l->size() && out.size() <= max_print_bytes; ++i) {
      out += i ? ", " : "";
      to_json((*l)[i], depth + 1, out);
    }
    out += ']';
  } else if (d) {
    out += '{';
    for (size_t i = 0; i < d->size() && out.size() <= max_print_bytes; ++i) {
      out += (i ? ", " : "") + json_string((*d)[i].first) + ": ";
      to_json((*d)[i].second, depth + 1, out);
    }
    out += '}';
  } else {
    out += v.to_output();
  }
}

const std::string* string_arg(const std::vector<value>& args, size_t i) {
  return i < args.size() ? args[i].as_string() : nullptr;
}

expected<value> string_method(const std::string& s, std::string_view name, const std::vector<value>& args, int line) {
  const std::string* a0 = string_arg(args, 0);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const std::string_view chars = a0 ? std::string_view(*a0) : blanks;
    return value(strip(s, name != "rstrip", name != "lstrip", chars));
  }
  if (name == "upper" || name == "lower")
    return value(ascii_case(s, name == "upper"));
  if (name == "title" || name == "capitalize")
    return value(title_case(name == "title" ? s : ascii_case(s, false), name == "title"));
  if ((name == "startswith" || name == "endswith") && a0) {
    const bool hit = name == "startswith" ? s.starts_with(*a0) : s.ends_with(*a0);
    return value(hit);
  }
  if (name == "replace" && a0 && string_arg(args, 1))
    return value(replace_all(s, *a0, *string_arg(args, 1)));
  if (name == "split") {
    list parts;
    if (!a0) { // split on runs of whitespace
      size_t i = 0;
      while (i < s.size()) {
        i = s.find_first_not_of(blanks, i);
        if (i == std::string::npos)
          break;
        const size_t j = std::min(s.find_first_of(blanks, i), s.size());
        parts.emplace_back(s.substr(i, j - i));
        i = j;
      }
      return value(std::move(parts));
    }
    if (a0->empty())
      return fail(line, "empty separator");
    size_t pos = 0;
    for (size_t hit; (hit = s.find(*a0, pos)) != std::string::npos; pos = hit + a0->size())
      parts.emplace_back(s.substr(pos, hit - pos));
    parts.emplace_back(s.substr(pos));
    return value(std::move(parts));
  }
  if (name == "join" && !args.empty() && args[0].as_list()) {
    std::string out;
    const list& l = *args[0].as_list();
    for (size_t i = 0; i < l.size(); ++i)
      out += (i ? s : std::string()) + l[i].to_output();
    return value(std::move(out));
  }
  return fail(line, "unknown string method '" + std::string(name) + "' (or wrong arguments)");
}

expected<value> dict_method(const dict& d, const value& self, std::string_view name, const std::vector<value>& args,
                            int line) {
  if (name == "get" && string_arg(args, 0)) {
    value v = self.get(*string_arg(args, 0));
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

} // namespace

expected<value> apply_filter(std::string_view name, const std::vector<value>& args, int line) {
  const value& v = args[0];
  const std::string* s = v.as_string();
  if (name == "default" || name == "d") {
    const bool boolean = args.size() > 2 && args[2].truthy();
    const bool use_default = boolean ? !v.truthy() : v.is_undefined();
    return use_default ? (args.size() > 1 ? args[1] : value(std::string())) : v;
  }
  if (name == "length" || name == "count") {
    if (s)
      return value(static_cast<int64_t>(count_code_points(*s)));
    if (auto l = v.as_list())
      return value(static_cast<int64_t>(l->size()));
    if (auto d = v.as_dict())
      return value(static_cast<int64_t>(d->size()));
    return fail(line, "object of type '" + std::string(v.type_name()) + "' has no length");
  }
  if (name == "string")
    return value(v.to_output());
  if (name == "tojson") {
    std::string out;
    to_json(v, 0, out);
    return value(std::move(out));
  }
  if (name == "list") {
    auto items = iterate(v, line);
    if (!items)
      return std::move(items.error());
    return value(list(std::move(*items)));
  }
  if (name == "first" || name == "last") {
    auto items = iterate(v, line);
    if (!items)
      return std::move(items.error());
    if (items->empty())
      return value();
    return name == "first" ? items->front() : items->back();
  }
  if (name == "join") {
    auto items = iterate(v, line);
    if (!items)
      return std::move(items.error());
    const std::string sep = args.size() > 1 ? args[1].to_output() : std::string();
    std::string out;
    for (size_t i = 0; i < items->size(); ++i)
      out += (i ? sep : std::string()) + (*items)[i].to_output();
    return value(std::move(out));
  }
  if (name == "int" || name == "float") {
    double d = 0;
    if (auto i = std::get_if<int64_t>(&v.v))
      d = static_cast<double>(*i);
    else if (auto f = std::get_if<double>(&v.v))
      d = *f;
    else if (s)
      d = std::strtod(s->c_str(), nullptr);
    return name == "int" ? value(static_cast<int64_t>(d)) : value(d);
  }
  if (!s)
    return fail(line, "filter '" + std::string(name) + "' needs a string, got '" + std::string(v.type_name()) + "'");
  if (name == "trim")
    return value(strip(*s, true, true, blanks));
  if (name == "upper" || name == "lower")
    return value(ascii_case(*s, name == "upper"));
  if (name == "capitalize")
    return value(title_case(ascii_case(*s, false), false));
  if (name == "title")
    return value(title_case(*s, true));
  if (name == "replace" && string_arg(args, 1) && string_arg(args, 2))
    return value(replace_all(*s, *string_arg(args, 1), *string_arg(args, 2)));
  return fail(line, "filter '" + std::string(name) + "': wrong arguments");
}

bool apply_test(std::string_view name, const value& v) {
  const auto* i = std::get_if<int64_t>(&v.v);
  const auto* b = std::get_if<bool>(&v.v);
  if (name == "defined")
    return !v.is_undefined();
  if (name == "undefined")
    return v.is_undefined();
  if (name == "none")
    return v.is_none();
  if (name == "string")
    return v.is_string();
  if (name == "number")
    return v.is_number();
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
  if (name == "iterable")
    return v.as_list() || v.as_dict() || v.is_string();
  if (name == "sequence")
    return v.as_list() || v.is_string();
  if (name == "even" || name == "odd")
    return i && (*i % 2 == 0) == (name == "even");
  return false;
}

expected<value> call_method(const value& self, std::string_view name, const std::vector<value>& args, int line) {
  if (auto s = self.as_string())
    return string_method(*s, name, args, line);
  if (auto d = self.as_dict())
    return dict_method(*d, self, name, args, line);
  return fail(line, "'" + std::string(self.type_name()) + "' has no method '" + std::string(name) + "'");
}

expected<value> call_function(std::string_view name, const std::vector<value>& args,
                              const std::vector<std::string>& names, int line) {
  if (name == "raise_exception")
    return make_error(errc::invalid_argument,
                      "chat template: " + (args.empty() ? std::string("raise_exception()") : args[0].to_output()));
  if (name == "namespace") {
    dict d;
    for (size_t i = 0; i < args.size(); ++i) {
      if (names[i].empty())
        return fail(line, "namespace() takes keyword arguments only");
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
      if (static_cast<int64_t>(out.size()) >= max_range)
        return fail(line, "range() too large");
      out.emplace_back(x);
    }
    return value(std::move(out));
  }
  return fail(line, "unknown function '" + std::string(name) + "'");
}

} // namespace dynamo::tok::jinja
