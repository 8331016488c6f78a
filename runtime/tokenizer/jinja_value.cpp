#include "runtime/tokenizer/jinja_value.hpp"

#include <cstdio>

namespace dynamo::tok::jinja {

namespace {

std::string format_double(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  std::string s = buf;
  // Shortest form that reads back the same, like Python's repr.
  for (int prec = 1; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) {
      s = buf;
      break;
    }
  }
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string quote(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + q;
}

} // namespace

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
    bool operator()(const std::string& s) const { return !s.empty(); }
    bool operator()(const std::shared_ptr<list>& l) const { return !l->empty(); }
    bool operator()(const std::shared_ptr<dict>& d) const { return !d->empty(); }
  };
  return std::visit(visitor{}, v);
}

std::string value::repr() const {
  if (auto s = as_string())
    return quote(*s);
  return to_output();
}

std::string value::to_output() const {
  struct visitor {
    std::string operator()(undefined) const { return {}; }
    std::string operator()(none) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::shared_ptr<list>& l) const {
      std::string out = "[";
      for (size_t i = 0; i < l->size(); ++i)
        out += (i ? ", " : "") + (*l)[i].repr();
      return out + "]";
    }
    std::string operator()(const std::shared_ptr<dict>& d) const {
      std::string out = "{";
      for (size_t i = 0; i < d->size(); ++i)
        out += (i ? ", " : "") + quote((*d)[i].first) + ": " + (*d)[i].second.repr();
      return out + "}";
    }
  };
  return std::visit(visitor{}, v);
}

std::string_view value::type_name() const noexcept {
  static constexpr std::string_view names[] = {"undefined", "none", "bool", "int", "float", "string", "list", "dict"};
  return names[v.index()];
}

value value::get(std::string_view key) const {
  if (auto d = as_dict())
    for (const auto& [k, val] : *d)
      if (k == key)
        return val;
  return {};
}

bool equals(const value& a, const value& b) {
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
    if (l->size() != m->size())
      return false;
    for (size_t i = 0; i < l->size(); ++i)
      if (!equals((*l)[i], (*m)[i]))
        return false;
    return true;
  }
  if (auto d = a.as_dict()) {
    const auto* e = b.as_dict();
    if (d->size() != e->size())
      return false;
    for (const auto& [k, val] : *d)
      if (!equals(val, b.get(k)))
        return false;
    return true;
  }
  return true; // undefined == undefined, none == none
}

} // namespace dynamo::tok::jinja
