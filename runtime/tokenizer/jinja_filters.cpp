// Filters of the Jinja subset, with jinja2's semantics (string filters take
// str() of any value; HF's tojson is json.dumps).
#include "runtime/tokenizer/jinja_builtins.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dynamo::tok::jinja {

namespace {

// Binds positional and keyword arguments to a filter's parameters (after the
// filtered value): result[i] is parameter i, or undefined when not given.
expected<std::vector<value>> bind(std::string_view filter, const std::vector<value>& args,
                                  const std::vector<std::string>& kwnames,
                                  std::initializer_list<std::string_view> params, int line) {
  std::vector<value> out(params.size());
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& kw = i - 1 < kwnames.size() ? kwnames[i - 1] : std::string();
    size_t slot = i - 1;
    if (!kw.empty()) {
      auto it = std::find(params.begin(), params.end(), kw);
      if (it == params.end())
        return fail(line, "filter '" + std::string(filter) + "' got an unexpected keyword argument '" + kw + "'");
      slot = static_cast<size_t>(it - params.begin());
    } else if (slot >= params.size()) {
      return fail(line, "filter '" + std::string(filter) + "' takes at most " + std::to_string(params.size()) +
                            " arguments");
    }
    out[slot] = args[i];
  }
  return out;
}

void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = decode_utf8(s, i);
    const char32_t cp = c.cp;
    char buf[16];
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20) {
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          out += buf;
        } else if (ensure_ascii && cp >= 0x80 && cp != invalid_cp) {
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                          static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          }
          out += buf;
        } else {
          out.append(s, i, c.len);
        }
    }
    i += c.len;
  }
  out += '"';
}

expected<void> json_value(const value& v, const json_options& opt, int depth, int line, std::string& out) {
  if (out.size() > max_print_bytes || depth > max_print_depth)
    return fail(line, "tojson: value nested too deeply or too large");
  if (auto s = v.as_string()) {
    json_string(*s, opt.ensure_ascii, out);
    return {};
  }
  if (v.is_none()) {
    out += "null";
    return {};
  }
  if (auto b = std::get_if<bool>(&v.v)) {
    out += *b ? "true" : "false";
    return {};
  }
  if (auto i = std::get_if<int64_t>(&v.v)) {
    out += std::to_string(*i);
    return {};
  }
  if (auto d = std::get_if<double>(&v.v)) {
    out += std::isnan(*d) ? "NaN" : std::isinf(*d) ? (*d > 0 ? "Infinity" : "-Infinity") : format_double(*d);
    return {};
  }
  const list* l = v.as_list();
  const dict* d = v.as_dict();
  if (!l && !d)
    return fail(line, "tojson: object of type " + std::string(v.type_name()) + " is not JSON serializable");
  const size_t n = l ? l->size() : d->size();
  if (n == 0) {
    out += l ? "[]" : "{}";
    return {};
  }
  std::string inner_nl, outer_nl;
  if (opt.indent) {
    inner_nl = "\n";
    for (int k = 0; k <= depth; ++k)
      inner_nl += *opt.indent;
    outer_nl = inner_nl.substr(0, inner_nl.size() - opt.indent->size());
  }
  std::vector<size_t> order(n);
  for (size_t k = 0; k < n; ++k)
    order[k] = k;
  if (d && opt.sort_keys)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (*d)[a].first < (*d)[b].first; });
  out += l ? '[' : '{';
  out += inner_nl;
  for (size_t k = 0; k < n; ++k) {
    if (k > 0)
      out += opt.item_separator + inner_nl;
    const value* item = l ? &(*l)[order[k]] : &(*d)[order[k]].second;
    if (d) {
      json_string((*d)[order[k]].first, opt.ensure_ascii, out);
      out += opt.key_separator;
    }
    if (auto ok = json_value(*item, opt, depth + 1, line, out); !ok)
      return ok;
  }
  out += outer_nl;
  out += l ? ']' : '}';
  return {};
}

// HF's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
expected<value> tojson(const std::vector<value>& args, const std::vector<std::string>& kwnames, int line) {
  auto p = bind("tojson", args, kwnames, {"ensure_ascii", "indent", "separators", "sort_keys"}, line);
  if (!p)
    return std::move(p.error());
  json_options opt;
  opt.ensure_ascii = (*p)[0].truthy();
  const value& indent = (*p)[1];
  if (auto n = std::get_if<int64_t>(&indent.v))
    opt.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(*n, 0, 256)), ' ');
  else if (auto s = indent.as_string())
    opt.indent = *s;
  else if (!indent.is_undefined() && !indent.is_none())
    return fail(line, "tojson: indent must be an integer or a string");
  if (opt.indent)
    opt.item_separator = ",";
  if (auto seps = (*p)[2].as_list()) {
    if (seps->size() != 2 || !(*seps)[0].as_string() || !(*seps)[1].as_string())
      return fail(line, "tojson: separators must be two strings");
    opt.item_separator = *(*seps)[0].as_string();
    opt.key_separator = *(*seps)[1].as_string();
  }
  opt.sort_keys = (*p)[3].truthy();
  auto s = to_json(args[0], opt, line);
  if (!s)
    return std::move(s.error());
  return value(std::move(*s));
}

// obj.attr / obj[attr] as jinja2's environment.getitem: dict keys, list
// indexes for digits, "a.b" paths.
value attribute_of(const value& obj, const std::string& path) {
  value cur = obj;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = std::min(path.find('.', pos), path.size());
    const std::string part = path.substr(pos, dot - pos);
    const bool digits =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = digits ? index_value(cur, value(static_cast<int64_t>(std::atoll(part.c_str())))) : cur.get(part);
    pos = dot + 1;
  }
  return cur;
}

// select / reject / selectattr / rejectattr.
expected<value> select_items(std::string_view name, const std::vector<value>& args, int line) {
  auto items = iterate(args[0], line);
  if (!items)
    return std::move(items.error());
  const bool by_attr = name.ends_with("attr");
  const bool keep_when = name.starts_with("select");
  const size_t test_at = by_attr ? 2 : 1;
  if (by_attr && (args.size() < 2 || !args[1].as_string()))
    return fail(line, std::string(name) + " needs an attribute name");
  const std::string* test = test_at < args.size() ? args[test_at].as_string() : nullptr;
  const std::vector<value> test_args(args.begin() + static_cast<long>(std::min(args.size(), test_at + 1)), args.end());
  list out;
  for (auto& item : *items) {
    const value v = by_attr ? attribute_of(item, *args[1].as_string()) : item;
    bool pass = v.truthy();
    if (test) {
      auto t = apply_test(*test, v, test_args, line);
      if (!t)
        return std::move(t.error());
      pass = *t;
    }
    if (pass == keep_when)
      out.push_back(std::move(item));
  }
  return value(std::move(out));
}

// map(attribute='x', default=...) or map('filter', args...).
expected<value> map_items(const std::vector<value>& args, const std::vector<std::string>& kwnames, int line) {
  auto items = iterate(args[0], line);
  if (!items)
    return std::move(items.error());
  std::string attribute;
  value fallback;
  std::vector<value> filter_args{value()};
  std::vector<std::string> filter_kw;
  const std::string* filter = nullptr;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& kw = i - 1 < kwnames.size() ? kwnames[i - 1] : std::string();
    if (kw == "attribute" && args[i].as_string())
      attribute = *args[i].as_string();
    else if (kw == "default")
      fallback = args[i];
    else if (i == 1 && kw.empty() && args[i].as_string())
      filter = args[i].as_string();
    else {
      filter_args.push_back(args[i]);
      filter_kw.push_back(kw);
    }
  }
  if (attribute.empty() && !filter)
    return fail(line, "map needs a filter name or attribute=");
  list out;
  for (const auto& item : *items) {
    if (!attribute.empty()) {
      value v = attribute_of(item, attribute);
      out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
      continue;
    }
    filter_args[0] = item;
    auto v = apply_filter(*filter, filter_args, filter_kw, line);
    if (!v)
      return v;
    out.push_back(std::move(*v));
  }
  return value(std::move(out));
}

} // namespace

expected<std::string> to_json(const value& v, const json_options& opt, int line) {
  std::string out;
  if (auto ok = json_value(v, opt, 0, line, out); !ok)
    return std::move(ok.error());
  return out;
}

expected<value> apply_filter(std::string_view name, const std::vector<value>& args,
                             const std::vector<std::string>& kwnames, int line) {
  const value& v = args[0];
  auto arg = [&](size_t i) -> const value& {
    static const value missing;
    return i < args.size() ? args[i] : missing;
  };
  if (name == "default" || name == "d") {
    const bool boolean = arg(2).truthy();
    const bool use_default = boolean ? !v.truthy() : v.is_undefined();
    return use_default ? (args.size() > 1 ? args[1] : value(std::string())) : v;
  }
  if (name == "length" || name == "count") {
    if (auto s = v.as_string())
      return value(static_cast<int64_t>(text::count_code_points(*s)));
    if (auto l = v.as_list())
      return value(static_cast<int64_t>(l->size()));
    if (auto d = v.as_dict())
      return value(static_cast<int64_t>(d->size()));
    if (v.is_undefined())
      return value(int64_t{0});
    return fail(line, "object of type '" + std::string(v.type_name()) + "' has no length");
  }
  if (name == "string")
    return value(v.to_output());
  if (name == "safe")
    return v.is_string() ? v : value(v.to_output());
  if (name == "tojson")
    return tojson(args, kwnames, line);
  if (name == "list" || name == "first" || name == "last" || name == "join") {
    if (auto s = v.as_string(); s && name != "list") {
      if (name == "join") {
        auto out = text::join_characters(*s, args.size() > 1 ? args[1].to_output() : std::string(), line);
        if (!out)
          return std::move(out.error());
        return value(std::move(*out));
      }
      return name == "first" ? text::first_character(*s) : text::last_character(*s);
    }
    auto items = iterate(v, line);
    if (!items)
      return std::move(items.error());
    if (name == "list")
      return value(list(std::move(*items)));
    if (name == "first" || name == "last")
      return items->empty() ? value() : name == "first" ? items->front() : items->back();
    const std::string sep = args.size() > 1 ? args[1].to_output() : std::string();
    std::string out;
    for (size_t i = 0; i < items->size(); ++i)
      if (auto ok = text::join_append(out, i == 0, sep, (*items)[i].to_output(), line); !ok)
        return std::move(ok.error());
    return value(std::move(out));
  }
  if (name == "items") {
    if (v.is_undefined())
      return value(list{});
    auto d = v.as_dict();
    if (!d)
      return fail(line, "items: can only get item pairs from a mapping");
    list out;
    for (const auto& [k, x] : *d)
      out.emplace_back(list{value(k), x});
    return value(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return select_items(name, args, line);
  if (name == "map")
    return map_items(args, kwnames, line);
  if (name == "int" || name == "float") {
    double d = 0;
    if (auto i = std::get_if<int64_t>(&v.v))
      d = static_cast<double>(*i);
    else if (auto f = std::get_if<double>(&v.v))
      d = *f;
    else if (auto b = std::get_if<bool>(&v.v))
      d = *b;
    else if (auto s = v.as_string())
      d = std::strtod(s->c_str(), nullptr);
    return name == "int" ? value(static_cast<int64_t>(d)) : value(d);
  }
  // String filters work on str() of anything (undefined: "").
  const std::string s = v.to_output();
  if (name == "trim") {
    const std::string* chars = arg(1).as_string();
    return value(text::strip(s, true, true, chars));
  }
  if (name == "upper" || name == "lower")
    return value(text::change_case(s, name == "upper"));
  if (name == "capitalize")
    return value(text::title_case(text::change_case(s, false), false));
  if (name == "title")
    return value(text::title_case(s, true));
  if (name == "replace" && arg(1).as_string() && arg(2).as_string()) {
    auto r = text::replace_all(s, *arg(1).as_string(), *arg(2).as_string(), line);
    return r ? value(std::move(*r)) : expected<value>(std::move(r.error()));
  }
  return fail(line, "filter '" + std::string(name) + "': wrong arguments");
}

} // namespace dynamo::tok::jinja
