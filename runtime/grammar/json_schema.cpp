#include "runtime/grammar/json_schema.hpp"

#include "runtime/grammar/json_primitives.hpp"
#include "runtime/grammar/regex.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>

namespace dynamo::gram {

namespace {

using json = nlohmann::ordered_json;

const std::set<std::string, std::less<>> annotations = {
    "description", "title", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly",
    "writeOnly", "$defs", "definitions", "strict"};
const std::set<std::string, std::less<>> supported = {
    "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
    "enum", "const", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "nullable", "anyOf", "oneOf", "allOf", "$ref"};

std::string json_key_literal(std::string_view key) {
  std::string out = "\"";
  for (size_t i = 0; i < key.size();) {
    const char32_t cp = decode_utf8(key, i);
    out += cp == invalid_cp ? std::string("\\ufffd") : json_escape_cp(cp);
  }
  return out + "\"";
}

std::string rule_name_for(std::string_view path) {
  std::string out;
  for (char c : path) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  return out.empty() ? "schema" : out;
}

bool has_only_annotations(const json& s, std::initializer_list<std::string_view> besides) {
  for (const auto& [k, v] : s.items()) {
    if (annotations.count(k)) continue;
    if (std::find(besides.begin(), besides.end(), k) != besides.end()) continue;
    return false;
  }
  return true;
}

class schema_compiler {
public:
  schema_compiler(grammar& g, const json& root, const json_options& o) : g_(g), root_(root), b_(g, o) {}

  expected<expr_id> compile(const json& s, const std::string& path) {
    if (++depth_ > 200) return fail(errc::invalid_argument, "schema nests too deeply", path);
    auto r = compile_inner(s, path);
    --depth_;
    return r;
  }

  /// A rule for `s` (a reference when it compiles to one already).
  expected<expr_id> compile_as_rule(const json& s, const std::string& path) {
    auto e = compile(s, path);
    if (!e) return e;
    if (g_.at(*e).kind == expr_kind::ref) return e;
    const rule_id r = g_.add_rule(rule_name_for(path));
    g_.define(r, *e);
    return g_.ref(r);
  }

private:
  grammar& g_;
  const json& root_;
  detail::json_blocks b_;
  std::map<std::string, rule_id> refs_;
  int depth_ = 0;

  static caf::error fail(errc c, const std::string& what, const std::string& path) {
    return make_error(c, "JSON Schema: " + what + " (at " + (path.empty() ? "#" : path) + ")");
  }

  expected<expr_id> compile_inner(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return g_.ref(b_.value());
      return fail(errc::invalid_argument, "schema 'false' allows no value", path);
    }
    if (!s.is_object()) return fail(errc::invalid_argument, "a schema must be an object or a boolean", path);
    for (const auto& [k, v] : s.items()) {
      if (!annotations.count(k) && !supported.count(k))
        return fail(errc::unsupported, "keyword '" + k + "' is not supported", path);
    }
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return fail(errc::invalid_argument, "'$ref' must be a string", path);
      if (has_only_annotations(s, {"$ref"})) return compile_ref(s["$ref"].get<std::string>(), path);
      json rest = s;
      rest.erase("$ref");
      auto target = resolve(s, path);
      if (!target) return target.error();
      auto merged = merge(rest, *target, path);
      if (!merged) return merged.error();
      return compile(*merged, path);
    }
    if (s.contains("allOf")) {
      const json& parts = s["allOf"];
      if (!parts.is_array() || parts.empty()) return fail(errc::invalid_argument, "'allOf' must be a non-empty array", path);
      json merged = s;
      merged.erase("allOf");
      for (size_t i = 0; i < parts.size(); ++i) {
        auto part = resolve(parts[i], path + "/allOf/" + std::to_string(i));
        if (!part) return part.error();
        auto m = merge(merged, *part, path + "/allOf/" + std::to_string(i));
        if (!m) return m.error();
        merged = std::move(*m);
      }
      return compile(merged, path);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) return compile_branches(s, path);
    auto declared = types_of(s, path);
    if (!declared) return declared.error();
    std::vector<std::string> types = std::move(*declared);
    if (s.contains("enum") || s.contains("const")) return compile_enum(s, types, path);
    if (types.empty()) {
      types = implied_types(s);
      if (types.empty()) return g_.ref(b_.value());
      if (s.value("nullable", false)) types.push_back("null");
    }
    std::vector<expr_id> alts;
    for (const std::string& t : types) {
      auto e = compile_type(t, s, path);
      if (!e) return e;
      alts.push_back(*e);
    }
    return g_.alt(std::move(alts));
  }

  /// anyOf / oneOf: one alternative per branch, with sibling keywords merged in.
  expected<expr_id> compile_branches(const json& s, const std::string& path) {
    if (s.contains("anyOf") && s.contains("oneOf")) return fail(errc::unsupported, "'anyOf' together with 'oneOf'", path);
    const std::string key = s.contains("anyOf") ? "anyOf" : "oneOf";
    const json& branches = s[key];
    if (!branches.is_array() || branches.empty())
      return fail(errc::invalid_argument, "'" + key + "' must be a non-empty array", path);
    json rest = s;
    rest.erase(key);
    const bool plain = has_only_annotations(rest, {});
    std::vector<expr_id> alts;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string p = path + "/" + key + "/" + std::to_string(i);
      expected<expr_id> e = expr_id{0};
      if (plain) {
        e = compile(branches[i], p);
      } else {
        auto branch = resolve(branches[i], p);
        if (!branch) return branch.error();
        auto m = merge(rest, *branch, p);
        if (!m) return m.error();
        e = compile(*m, p);
      }
      if (!e) return e;
      alts.push_back(*e);
    }
    return g_.alt(std::move(alts));
  }

  /// The declared types (with "null" for nullable), empty when none.
  static expected<std::vector<std::string>> types_of(const json& s, const std::string& path) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array()) {
        for (const json& x : t) {
          if (!x.is_string()) return fail(errc::invalid_argument, "'type' entries must be strings", path);
          types.push_back(x.get<std::string>());
        }
      } else {
        return fail(errc::invalid_argument, "'type' must be a string or an array", path);
      }
      if (types.empty()) return fail(errc::invalid_argument, "'type' is an empty array", path);
    }
    if (s.value("nullable", false) && !types.empty() && std::find(types.begin(), types.end(), "null") == types.end())
      types.push_back("null");
    return types;
  }

  /// The type the keywords imply when "type" is absent (empty: any value).
  static std::vector<std::string> implied_types(const json& s) {
    auto any = [&](std::initializer_list<const char*> keys) {
      return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.contains(k); });
    };
    if (any({"properties", "required", "additionalProperties"})) return {"object"};
    if (any({"items", "prefixItems", "minItems", "maxItems"})) return {"array"};
    if (any({"minLength", "maxLength", "pattern", "format"})) return {"string"};
    if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) return {"number"};
    return {};
  }

  expected<expr_id> compile_type(const std::string& t, const json& s, const std::string& path) {
    if (t == "string") return compile_string(s, path);
    if (t == "number") return compile_number(s, false, path);
    if (t == "integer") return compile_number(s, true, path);
    if (t == "boolean") return g_.alt({g_.literal("true"), g_.literal("false")});
    if (t == "null") return g_.literal("null");
    if (t == "object") return compile_object(s, path);
    if (t == "array") return compile_array(s, path);
    return fail(errc::invalid_argument, "unknown type '" + t + "'", path);
  }

  // ---- references --------------------------------------------------------
  expected<const json*> lookup(const std::string& ref, const std::string& path) const {
    if (ref == "#") return &root_;
    if (ref.rfind("#/", 0) != 0)
      return fail(errc::unsupported, "'$ref' '" + ref + "' (only local references '#/...' are supported)", path);
    json::json_pointer ptr;
    try {
      ptr = json::json_pointer(ref.substr(1));
    } catch (const std::exception&) {
      return fail(errc::invalid_argument, "malformed '$ref' '" + ref + "'", path);
    }
    if (!root_.contains(ptr)) return fail(errc::invalid_argument, "'$ref' '" + ref + "' points nowhere", path);
    return &root_.at(ptr);
  }

  expected<expr_id> compile_ref(const std::string& ref, const std::string& path) {
    if (auto it = refs_.find(ref); it != refs_.end()) return g_.ref(it->second);
    auto target = lookup(ref, path);
    if (!target) return target.error();
    const rule_id r = g_.add_rule(rule_name_for(ref));
    refs_.emplace(ref, r);
    auto e = compile(**target, ref);
    if (!e) return e;
    g_.define(r, *e);
    return g_.ref(r);
  }

  /// `s` with a bare $ref chain followed (for merging).
  expected<json> resolve(const json& s, const std::string& path) const {
    const json* cur = &s;
    for (int hops = 0; cur->is_object() && cur->contains("$ref") && has_only_annotations(*cur, {"$ref"}); ++hops) {
      if (hops > 32) return fail(errc::invalid_argument, "'$ref' cycle", path);
      if (!(*cur)["$ref"].is_string()) return fail(errc::invalid_argument, "'$ref' must be a string", path);
      auto t = lookup((*cur)["$ref"].get<std::string>(), path);
      if (!t) return t.error();
      cur = *t;
    }
    if (cur->is_boolean() && cur->get<bool>()) return json::object();
    return *cur;
  }

  /// The conjunction of two object-shaped schemas, keyword by keyword.
  expected<json> merge(json a, const json& b, const std::string& path) const {
    if (!b.is_object()) return fail(errc::unsupported, "'allOf'/'$ref' combining a non-object schema", path);
    for (const auto& [k, v] : b.items()) {
      if (annotations.count(k)) continue;
      if (!a.contains(k)) {
        a[k] = v;
        continue;
      }
      json& x = a[k];
      if (x == v) continue;
      if (k == "properties") {
        for (const auto& [name, sub] : v.items()) {
          if (!x.contains(name) || x[name] == sub)
            x[name] = sub;
          else
            x[name] = json{{"allOf", json::array({x[name], sub})}};
        }
      } else if (k == "required") {
        for (const json& n : v)
          if (std::find(x.begin(), x.end(), n) == x.end()) x.push_back(n);
      } else if (k == "type") {
        json xs = x.is_array() ? x : json::array({x}), vs = v.is_array() ? v : json::array({v}), both = json::array();
        for (const json& t : xs)
          if (std::find(vs.begin(), vs.end(), t) != vs.end()) both.push_back(t);
        if (both.empty()) return fail(errc::invalid_argument, "'allOf' parts with disjoint types", path);
        x = both.size() == 1 ? both[0] : both;
      } else if (k == "additionalProperties" && (x == false || v == false)) {
        x = false;
      } else if ((k == "minLength" || k == "minItems" || k == "minimum") && x.is_number() && v.is_number()) {
        x = std::max(x.get<double>(), v.get<double>());
      } else if ((k == "maxLength" || k == "maxItems" || k == "maximum") && x.is_number() && v.is_number()) {
        x = std::min(x.get<double>(), v.get<double>());
      } else {
        return fail(errc::unsupported, "'allOf' parts with different '" + k + "'", path);
      }
    }
    return a;
  }

  // ---- enum / const -------------------------------------------------------
  static bool type_matches(const json& v, const std::vector<std::string>& types) {
    if (types.empty()) return true;
    for (const std::string& t : types) {
      if ((t == "string" && v.is_string()) || (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null()) ||
          (t == "object" && v.is_object()) || (t == "array" && v.is_array()) || (t == "number" && v.is_number()))
        return true;
      if (t == "integer" && (v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())))
        return true;
    }
    return false;
  }

  expected<expr_id> compile_enum(const json& s, const std::vector<std::string>& types, const std::string& path) {
    json values = json::array();
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) return fail(errc::invalid_argument, "'enum' must be an array", path);
      for (const json& v : s["enum"])
        if (!s.contains("const") || v == s["const"]) values.push_back(v);
      if (s.contains("const")) values.erase(values.begin());
    }
    std::vector<expr_id> alts;
    for (const json& v : values)
      if (type_matches(v, types)) alts.push_back(g_.literal(v.dump()));
    if (alts.empty()) return fail(errc::invalid_argument, "'enum'/'const' leaves no value (of the given type)", path);
    return g_.alt(std::move(alts));
  }

  // ---- strings and numbers --------------------------------------------------
  static expected<uint32_t> count(const json& s, const char* key, uint32_t dflt, const std::string& path) {
    if (!s.contains(key)) return dflt;
    const json& v = s[key];
    if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>())
      return fail(errc::invalid_argument, std::string("'") + key + "' must be a non-negative integer", path);
    if (v.get<double>() > 100000) return fail(errc::unsupported, std::string("'") + key + "' above 100000", path);
    return static_cast<uint32_t>(v.get<double>());
  }

  expected<expr_id> compile_string(const json& s, const std::string& path) {
    auto lo = count(s, "minLength", 0, path);
    if (!lo) return lo.error();
    auto hi = count(s, "maxLength", grammar::unbounded, path);
    if (!hi) return hi.error();
    if (*hi < *lo) return fail(errc::invalid_argument, "'maxLength' < 'minLength'", path);
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern")) {
      if (lengths || s.contains("format"))
        return fail(errc::unsupported, "'pattern' together with 'minLength'/'maxLength'/'format'", path);
      if (!s["pattern"].is_string()) return fail(errc::invalid_argument, "'pattern' must be a string", path);
      auto e = add_regex(g_, s["pattern"].get<std::string>(), regex_options{.json_string = true});
      if (!e) return fail(code_of(e.error()), message_of(e.error()), path);
      return g_.seq({g_.literal("\""), *e, g_.literal("\"")});
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) return fail(errc::invalid_argument, "'format' must be a string", path);
      if (auto re = detail::json_blocks::format_regex(s["format"].get<std::string>())) {
        if (lengths) return fail(errc::unsupported, "'format' together with 'minLength'/'maxLength'", path);
        auto e = add_regex(g_, *re);
        if (!e) return e;
        return g_.seq({g_.literal("\""), *e, g_.literal("\"")});
      }
      // Other formats are annotations (as JSON Schema 2020-12 treats them by default).
    }
    if (!lengths) return g_.ref(b_.string());
    return b_.string_length(*lo, *hi);
  }

  expected<expr_id> compile_number(const json& s, bool integer, const std::string& path) {
    const double big = double(detail::json_blocks::max_int);
    double lo = -big, hi = big;
    bool lo_incl = true, hi_incl = true, bounded = false;
    auto bound = [&](const char* key, bool is_min, bool incl) -> expected<void> {
      if (!s.contains(key)) return {};
      const json& v = s[key];
      if (v.is_boolean()) return {}; // draft-4 exclusive flags, read below
      if (!v.is_number()) return fail(errc::invalid_argument, std::string("'") + key + "' must be a number", path);
      const double x = v.get<double>();
      bounded = true;
      if (is_min && (x > lo || (x == lo && !incl))) lo = x, lo_incl = incl;
      if (!is_min && (x < hi || (x == hi && !incl))) hi = x, hi_incl = incl;
      return {};
    };
    const bool ex_min_flag = s.value("exclusiveMinimum", json()).is_boolean() && s["exclusiveMinimum"].get<bool>();
    const bool ex_max_flag = s.value("exclusiveMaximum", json()).is_boolean() && s["exclusiveMaximum"].get<bool>();
    for (auto r : {bound("minimum", true, !ex_min_flag), bound("maximum", false, !ex_max_flag),
                   bound("exclusiveMinimum", true, false), bound("exclusiveMaximum", false, false)})
      if (!r) return r.error();
    if (lo < -big) lo = -big, lo_incl = true;
    if (hi > big) hi = big, hi_incl = true;
    if (!bounded) return g_.ref(integer ? b_.integer() : b_.number());
    const double ilo = lo_incl ? std::ceil(lo) : std::floor(lo) + 1, ihi = hi_incl ? std::floor(hi) : std::ceil(hi) - 1;
    std::vector<expr_id> alts;
    if (ilo <= ihi) alts.push_back(b_.int_range(int64_t(ilo), int64_t(ihi)));
    if (!integer) {
      // x = I.f lies in [I, I+1): sound for I >= the integer bound and I+1 <= hi.
      const double plo = std::max(0.0, lo_incl ? std::ceil(lo) : std::floor(lo) + 1), phi = std::floor(hi) - 1;
      if (plo <= phi)
        alts.push_back(g_.seq({b_.nonneg_range(uint64_t(plo), uint64_t(phi)), g_.literal("."), b_.fraction_digits()}));
      // x = -(I.f) lies in (-(I+1), -I].
      const double nlo = std::max(0.0, hi_incl ? std::ceil(-hi) : std::floor(-hi) + 1), nhi = std::floor(-lo) - 1;
      if (nlo <= nhi)
        alts.push_back(g_.seq({g_.literal("-"), b_.nonneg_range(uint64_t(nlo), uint64_t(nhi)), g_.literal("."),
                               b_.fraction_digits()}));
    }
    if (alts.empty())
      return fail(errc::unsupported, "a numeric range without an integer (or integer-part) value in it", path);
    return g_.alt(std::move(alts));
  }

  // ---- objects and arrays ---------------------------------------------------
  expected<expr_id> compile_object(const json& s, const std::string& path);
  expected<expr_id> compile_array(const json& s, const std::string& path);
};

expected<expr_id> schema_compiler::compile_object(const json& s, const std::string& path) {
  const json props = s.value("properties", json::object());
  if (!props.is_object()) return fail(errc::invalid_argument, "'properties' must be an object", path);
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return fail(errc::invalid_argument, "'required' must be an array", path);
    for (const json& n : s["required"]) {
      if (!n.is_string()) return fail(errc::invalid_argument, "'required' entries must be strings", path);
      required.insert(n.get<std::string>());
    }
  }
  // Absent additionalProperties: none when "properties" is given (what strict
  // structured outputs mean), any when the object is otherwise unconstrained.
  json additional = s.contains("additionalProperties") ? s["additionalProperties"]
                                                        : json(!s.contains("properties") && required.empty());
  struct item {
    std::string name;
    expr_id kv;
    bool required;
  };
  std::vector<item> items;
  std::set<std::string> names;
  auto add = [&](const std::string& name, const json& sub) -> expected<void> {
    auto v = compile_as_rule(sub, path + "/properties/" + name);
    if (!v) return v.error();
    items.push_back({name, g_.seq({g_.literal(json_key_literal(name)), b_.colon(), *v}), required.count(name) > 0});
    names.insert(name);
    return {};
  };
  for (const auto& [name, sub] : props.items())
    if (auto r = add(name, sub); !r) return r.error();
  for (const std::string& name : required)
    if (!names.count(name))
      if (auto r = add(name, json(true)); !r) return r.error();
  std::optional<expr_id> extra;
  if (!(additional.is_boolean() && !additional.get<bool>())) {
    auto v = compile_as_rule(additional, path + "/additionalProperties");
    if (!v) return v.error();
    extra = g_.seq({b_.key_excluding(names), b_.colon(), *v});
  }
  const uint32_t max_extra = b_.options().max_extra_properties;
  // rest[i]: the members from i on after one was written (each after a comma);
  // first[i]: the same when none has been written yet.
  const size_t n = items.size();
  std::vector<expr_id> rest(n + 1), first(n + 1);
  rest[n] = extra && max_extra > 0 ? g_.repeat(g_.seq({b_.comma(), *extra}), 0, max_extra) : g_.empty();
  first[n] = extra && max_extra > 0
                 ? g_.optional(g_.seq({*extra, g_.repeat(g_.seq({b_.comma(), *extra}), 0, max_extra - 1)}))
                 : g_.empty();
  for (size_t i = n; i-- > 0;) {
    const expr_id with_comma = g_.seq({b_.comma(), items[i].kv});
    rest[i] = g_.seq({items[i].required ? with_comma : g_.optional(with_comma), rest[i + 1]});
    const expr_id here = g_.seq({items[i].kv, rest[i + 1]});
    first[i] = items[i].required ? here : g_.alt({here, first[i + 1]});
  }
  const rule_id r = g_.add_rule(rule_name_for(path.empty() ? "object" : path));
  g_.define(r, g_.seq({g_.literal("{"), b_.ws_in(), first[0], b_.ws_in(), g_.literal("}")}));
  return g_.ref(r);
}

expected<expr_id> schema_compiler::compile_array(const json& s, const std::string& path) {
  auto min_items = count(s, "minItems", 0, path);
  if (!min_items) return min_items.error();
  auto max_items = count(s, "maxItems", grammar::unbounded, path);
  if (!max_items) return max_items.error();
  if (*max_items < *min_items) return fail(errc::invalid_argument, "'maxItems' < 'minItems'", path);
  json prefix = s.value("prefixItems", json::array());
  json items = s.contains("items") ? s["items"] : json(true);
  if (items.is_array()) prefix = items, items = json(true); // draft-4 tuple form
  if (!prefix.is_array()) return fail(errc::invalid_argument, "'prefixItems' must be an array", path);
  std::vector<expr_id> seq;
  const uint32_t p = std::min<uint32_t>(static_cast<uint32_t>(prefix.size()), *max_items);
  for (uint32_t i = 0; i < p; ++i) {
    auto e = compile_as_rule(prefix[i], path + "/prefixItems/" + std::to_string(i));
    if (!e) return e;
    if (i) seq.push_back(b_.comma());
    seq.push_back(*e);
  }
  uint32_t lo = *min_items > p ? *min_items - p : 0;
  uint32_t hi = *max_items == grammar::unbounded ? grammar::unbounded : *max_items - p;
  // With prefixItems but no items, more items are only written when minItems needs them.
  if (!prefix.empty() && !s.contains("items")) hi = lo;
  const bool none_more = items.is_boolean() && !items.get<bool>();
  if (none_more && lo > 0) return fail(errc::invalid_argument, "'minItems' needs items that 'items': false forbids", path);
  if (none_more) hi = 0;
  expr_id body;
  if (hi == 0) {
    body = seq.empty() ? g_.empty() : g_.seq(seq);
  } else {
    auto item = compile_as_rule(items, path + "/items");
    if (!item) return item;
    const auto dec = [](uint32_t v) { return v == grammar::unbounded ? v : v - 1; };
    if (!seq.empty()) {
      seq.push_back(g_.repeat(g_.seq({b_.comma(), *item}), lo, hi));
      body = g_.seq(seq);
    } else if (lo == 0) {
      body = g_.optional(g_.seq({*item, g_.repeat(g_.seq({b_.comma(), *item}), 0, dec(hi))}));
    } else {
      body = g_.seq({*item, g_.repeat(g_.seq({b_.comma(), *item}), lo - 1, dec(hi))});
    }
  }
  const rule_id r = g_.add_rule(rule_name_for(path.empty() ? "array" : path));
  g_.define(r, g_.seq({g_.literal("["), b_.ws_in(), body, b_.ws_in(), g_.literal("]")}));
  return g_.ref(r);
}

expected<json> parse_schema(std::string_view text) {
  try {
    return json::parse(text);
  } catch (const std::exception& e) {
    return make_error(errc::invalid_argument, std::string("JSON Schema is not valid JSON: ") + e.what());
  }
}

} // namespace

rule_id add_json_value(grammar& g, const json_options& o) { return detail::json_blocks(g, o).value(); }
rule_id add_json_object(grammar& g, const json_options& o) { return detail::json_blocks(g, o).object(); }

expected<rule_id> add_json_schema(grammar& g, std::string_view schema_json, const json_options& o,
                                  std::string_view name) {
  auto doc = parse_schema(schema_json);
  if (!doc) return doc.error();
  schema_compiler c(g, *doc, o);
  auto e = c.compile(*doc, "");
  if (!e) return e.error();
  const rule_id r = g.add_rule(name);
  g.define(r, *e);
  return r;
}

grammar json_object_grammar(const json_options& o) {
  grammar g;
  const rule_id obj = add_json_object(g, o);
  const rule_id root = g.add_rule("root");
  g.define(root, g.ref(obj));
  g.set_root(root);
  return g;
}

expected<grammar> json_schema_grammar(std::string_view schema_json, const json_options& o) {
  grammar g;
  auto r = add_json_schema(g, schema_json, o, "root");
  if (!r) return r.error();
  g.set_root(*r);
  return g;
}

expected<rule_id> add_tool_call(grammar& g, const std::vector<tool_function>& fns, const json_options& o,
                                std::string_view arguments_key) {
  if (fns.empty()) return make_error(errc::invalid_argument, "tool call grammar: no functions");
  detail::json_blocks b(g, o);
  std::vector<expr_id> alts;
  for (const tool_function& f : fns) {
    auto params = add_json_schema(g, f.parameters_json, o, "arguments-" + f.name);
    if (!params) return make_error(code_of(params.error()), "function '" + f.name + "': " + message_of(params.error()));
    alts.push_back(g.seq({g.literal("{"), b.ws_in(), g.literal("\"name\""), b.colon(), g.literal(json_key_literal(f.name)),
                          b.comma(), g.literal(json_key_literal(arguments_key)), b.colon(), g.ref(*params), b.ws_in(), g.literal("}")}));
  }
  const rule_id r = g.add_rule("tool-call");
  g.define(r, g.alt(std::move(alts)));
  return r;
}

expected<rule_id> add_tool_call_array(grammar& g, const std::vector<tool_function>& fns, const json_options& o,
                                      uint32_t max_calls, std::string_view arguments_key) {
  auto call = add_tool_call(g, fns, o, arguments_key);
  if (!call) return call;
  detail::json_blocks b(g, o);
  const uint32_t more = max_calls == grammar::unbounded ? max_calls : (max_calls == 0 ? 0 : max_calls - 1);
  const rule_id r = g.add_rule("tool-calls");
  g.define(r, g.seq({g.literal("["), b.ws_in(), g.ref(*call), g.repeat(g.seq({b.comma(), g.ref(*call)}), 0, more),
                     b.ws_in(), g.literal("]")}));
  return r;
}

expected<grammar> tool_call_grammar(const std::vector<tool_function>& fns, bool parallel, const json_options& o) {
  grammar g;
  auto r = parallel ? add_tool_call_array(g, fns, o) : add_tool_call(g, fns, o);
  if (!r) return r.error();
  g.set_root(*r);
  return g;
}

} // namespace dynamo::gram
