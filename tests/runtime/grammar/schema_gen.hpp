// A seeded generator of JSON Schemas for the property test, covering the
// supported subset: type unions, objects (properties, required,
// additionalProperties false/true/schema), arrays (items, prefixItems,
// min/maxItems), strings (enum, const, lengths, pattern, format), bounded
// numbers and integers, boolean, null, nullable, enum/const of any value,
// anyOf, oneOf (disjoint branches), allOf of objects, $defs/$ref with
// recursion, and ignored annotations. Test code only; deterministic per seed.
#pragma once

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

namespace dynamo::gram::testing {

class schema_gen {
public:
  using json = nlohmann::ordered_json;
  explicit schema_gen(uint32_t seed) : rng_(seed) {}

  json make(int index) {
    json s;
    switch (index % 5) {
    case 0: { // recursion through $defs
      json node = object_of({{"value", leaf()}, {"children", json{{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}},
                                                                   {"maxItems", 2}}}},
                            {"value"});
      s = {{"$defs", {{"node", node}}}, {"$ref", "#/$defs/node"}};
      break;
    }
    case 1: { // a shared definition used twice
      json def = gen(1);
      s = object_of({{"first", json{{"$ref", "#/definitions/thing"}}}, {"second", json{{"$ref", "#/definitions/thing"}}},
                     {"n", leaf()}},
                    {"first"});
      s["definitions"] = {{"thing", def}};
      break;
    }
    default: s = gen(0); break;
    }
    if (pick(3) == 0) s["description"] = "generated schema " + std::to_string(index);
    return s;
  }

private:
  std::mt19937 rng_;

  uint32_t pick(uint32_t n) { return rng_() % n; }

  std::string name() {
    static const std::vector<std::string> names = {"id", "name", "a b", "q\"x", "\xC3\xBC" "ber", "tags", "x_1",
                                                   "value", "items", "date", "ok", "n", "back\\slash", "z"};
    return names[pick(static_cast<uint32_t>(names.size()))];
  }

  json object_of(const std::vector<std::pair<std::string, json>>& props, const std::vector<std::string>& required) {
    json p = json::object();
    for (const auto& [k, v] : props) p[k] = v;
    json s = {{"type", "object"}, {"properties", p}, {"required", required}};
    return s;
  }

  json string_schema() {
    switch (pick(8)) {
    case 0: return {{"type", "string"}};
    case 1: {
      const uint32_t lo = pick(4);
      return {{"type", "string"}, {"minLength", lo}, {"maxLength", lo + pick(6)}};
    }
    case 2: return {{"type", "string"}, {"enum", {"red", "green", "blue \"b\"", "\xE2\x82\xAC"}}};
    case 3: return {{"type", "string"}, {"const", "fixed"}};
    case 4: {
      static const std::vector<std::string> pats = {"^[a-z]{2,5}$", "[A-Z][0-9]{3}", "^(foo|ba[rz])+$",
                                                    "\\d{3}-\\d{4}", "[^\\s]{1,4}", "a\\.b?c*", "[\"\\\\]x"};
      return {{"type", "string"}, {"pattern", pats[pick(static_cast<uint32_t>(pats.size()))]}};
    }
    case 5: {
      static const std::vector<std::string> fmts = {"date", "time", "date-time", "uuid", "email", "ipv4"};
      return {{"type", "string"}, {"format", fmts[pick(static_cast<uint32_t>(fmts.size()))]}};
    }
    case 6: return {{"type", "string"}, {"nullable", true}, {"maxLength", 8}};
    default: return {{"type", "string"}, {"title", "plain"}, {"minLength", 1}};
    }
  }

  json number_schema() {
    const int lo = int(pick(2000)) - 1000;
    switch (pick(5)) {
    case 0: return {{"type", "integer"}};
    case 1: return {{"type", "integer"}, {"minimum", lo}, {"maximum", lo + int(pick(500))}};
    case 2: return {{"type", "integer"}, {"exclusiveMinimum", lo}, {"exclusiveMaximum", lo + 2 + int(pick(50))}};
    case 3: return {{"type", "number"}};
    default: return {{"type", "number"}, {"minimum", lo + 0.5}, {"exclusiveMaximum", lo + 3 + int(pick(100))}};
    }
  }

  json leaf() {
    switch (pick(7)) {
    case 0:
    case 1: return string_schema();
    case 2:
    case 3: return number_schema();
    case 4: return {{"type", "boolean"}};
    case 5: return {{"type", "null"}};
    default: return {{"enum", json::array({1, "two", nullptr, json::array({3, "x"}), json{{"k", false}}, 2.5})}};
    }
  }

  json object_schema(int depth) {
    json props = json::object();
    std::vector<std::string> required;
    const uint32_t n = pick(5);
    for (uint32_t i = 0; i < n; ++i) {
      const std::string k = name();
      if (props.contains(k)) continue;
      props[k] = gen(depth + 1);
      if (pick(2)) required.push_back(k);
    }
    json s = {{"type", "object"}, {"properties", props}};
    if (!required.empty()) s["required"] = required;
    switch (pick(4)) {
    case 0: s["additionalProperties"] = false; break;
    case 1: s["additionalProperties"] = true; break;
    case 2: s["additionalProperties"] = leaf(); break;
    default: break; // absent
    }
    return s;
  }

  json array_schema(int depth) {
    json s = {{"type", "array"}};
    if (pick(4) == 0) {
      s["prefixItems"] = json::array({leaf(), leaf()});
      if (pick(2)) s["items"] = false;
      return s;
    }
    s["items"] = gen(depth + 1);
    const uint32_t lo = pick(3);
    if (pick(2)) s["minItems"] = lo;
    if (pick(2)) s["maxItems"] = lo + pick(4);
    return s;
  }

  json gen(int depth) {
    const uint32_t k = depth >= 3 ? pick(3) : pick(11);
    switch (k) {
    case 0:
    case 1:
    case 2: return leaf();
    case 3:
    case 4: return object_schema(depth);
    case 5: return array_schema(depth);
    case 6: return {{"anyOf", json::array({gen(depth + 1), gen(depth + 1)})}};
    case 7: { // oneOf with branches of different types, so exactly one matches
      json a = string_schema(), b = {{"type", "integer"}, {"minimum", 0}};
      json c = {{"type", "array"}, {"items", {{"type", "boolean"}}}, {"maxItems", 3}};
      return {{"oneOf", json::array({a, b, c})}};
    }
    case 8: { // allOf of objects with different properties
      json a = {{"type", "object"}, {"properties", {{"left", leaf()}}}, {"required", {"left"}}};
      json b = {{"properties", {{"right", leaf()}}}, {"required", {"right"}}};
      return {{"allOf", json::array({a, b})}};
    }
    case 9: return {{"type", json::array({"string", "integer", "null"})}, {"maxLength", 4}, {"minimum", 0}};
    default: return {{"const", json{{"nested", json::array({1, "a\"b", nullptr})}}}};
    }
  }
};

} // namespace dynamo::gram::testing
