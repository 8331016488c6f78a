#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <limits>

namespace dynamo::openai::detail {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string_view type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::string: return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "value";
  }
}

caf::error type_error(std::string param, std::string_view expected, const json& got) {
  auto name = type_name(got);
  std::string_view article = name == "null" ? "" : (name == "integer" || name == "array" ||
                                                    name == "object") ? "an " : "a ";
  auto msg = fmt::format("Invalid type for '{}': expected {}, but got {}{} instead.", param,
                         expected, article, name);
  return field_error(errc::invalid_argument, std::move(param), codes::invalid_type, std::move(msg));
}

caf::error value_error(std::string param, std::string message) {
  auto msg = fmt::format("Invalid value for '{}': {}", param, message);
  return field_error(errc::invalid_argument, std::move(param), codes::invalid_value, std::move(msg));
}

caf::error unsupported_error(std::string param, std::string message) {
  auto msg = fmt::format("Unsupported value for '{}': {}", param, message);
  return field_error(errc::unsupported, std::move(param), codes::unsupported_value, std::move(msg));
}

caf::error missing_error(std::string param) {
  auto msg = fmt::format("Missing required parameter: '{}'.", param);
  return field_error(errc::invalid_argument, std::move(param), codes::missing_required_parameter,
                     std::move(msg));
}

size_t nesting_depth(std::string_view text) noexcept {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

expected<json> parse_object(std::string_view body) {
  if (nesting_depth(body) > max_json_depth)
    return field_error(errc::malformed_message, "", codes::invalid_json,
                       fmt::format("The JSON body nests deeper than {} levels.", max_json_depth));
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at ...": keep the tail.
    std::string_view what = e.what();
    if (auto pos = what.find("] "); pos != std::string_view::npos)
      what.remove_prefix(pos + 2);
    return field_error(errc::malformed_message, "", codes::invalid_json,
                       fmt::format("We could not parse the JSON body of your request: {}", what));
  }
  if (!j.is_object())
    return field_error(errc::invalid_argument, "", codes::invalid_type,
                       fmt::format("The request body must be a JSON object, not {}.", type_name(j)));
  return j;
}

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null())
    return nullptr;
  return &*it;
}

caf::error read_number(const json& obj, const char* name, double lo, double hi,
                       std::optional<double>& out) {
  const json* f = field(obj, name);
  if (!f)
    return {};
  if (!f->is_number())
    return type_error(name, "a number", *f);
  double v = f->get<double>();
  if (!(v >= lo && v <= hi))
    return value_error(name, fmt::format("expected a value between {} and {}, but got {}.", lo, hi, v));
  out = v;
  return {};
}

caf::error read_integer(const json& obj, const char* name, int64_t lo, int64_t hi,
                        std::optional<int64_t>& out) {
  const json* f = field(obj, name);
  if (!f)
    return {};
  if (!f->is_number_integer())
    return type_error(name, "an integer", *f);
  bool above = f->is_number_unsigned() &&
               f->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  int64_t v = above ? std::numeric_limits<int64_t>::max() : f->get<int64_t>();
  if (above || v < lo || v > hi)
    return value_error(name, fmt::format("expected an integer between {} and {}, but got {}.", lo,
                                         hi, f->dump()));
  out = v;
  return {};
}

caf::error read_bool(const json& obj, const char* name, std::optional<bool>& out) {
  const json* f = field(obj, name);
  if (!f)
    return {};
  if (!f->is_boolean())
    return type_error(name, "a boolean", *f);
  out = f->get<bool>();
  return {};
}

caf::error read_string(const json& obj, const char* name, std::optional<std::string>& out) {
  const json* f = field(obj, name);
  if (!f)
    return {};
  if (!f->is_string())
    return type_error(name, "a string", *f);
  out = f->get<std::string>();
  return {};
}

caf::error check_empty(const json& obj, const char* name, json::value_t type) {
  const json* f = field(obj, name);
  if (!f)
    return {};
  if (f->type() != type)
    return type_error(name, type == json::value_t::array ? "an array" : "an object", *f);
  if (!f->empty())
    return unsupported_error(name, fmt::format("this server does not implement '{}'.", name));
  return {};
}

caf::error read_required_string(const json& obj, const std::string& param, const char* name,
                                std::string& out) {
  const std::string where = param.empty() ? std::string{name} : param + "." + name;
  const json* v = field(obj, name);
  if (!v)
    return missing_error(where);
  if (!v->is_string())
    return type_error(where, "a string", *v);
  out = v->get<std::string>();
  return {};
}

caf::error read_model(const json& obj, std::string& out) {
  std::optional<std::string> model;
  if (auto err = read_string(obj, "model", model))
    return err;
  if (!model)
    return missing_error("model");
  if (model->empty())
    return value_error("model", "must not be empty.");
  out = std::move(*model);
  return {};
}

} // namespace dynamo::openai::detail
