#include "runtime/gguf/value.hpp"

#include <limits>

namespace dynamo::gguf {

std::string value_type_name(value_type t) {
  switch (t) {
    case value_type::u8: return "u8";
    case value_type::i8: return "i8";
    case value_type::u16: return "u16";
    case value_type::i16: return "i16";
    case value_type::u32: return "u32";
    case value_type::i32: return "i32";
    case value_type::f32: return "f32";
    case value_type::boolean: return "bool";
    case value_type::string: return "string";
    case value_type::array: return "array";
    case value_type::u64: return "u64";
    case value_type::i64: return "i64";
    case value_type::f64: return "f64";
  }
  return "type" + std::to_string(static_cast<uint32_t>(t));
}

bool value::is_integer() const noexcept {
  return std::holds_alternative<uint64_t>(data_) || std::holds_alternative<int64_t>(data_);
}

std::optional<uint64_t> value::to_uint() const noexcept {
  if (auto u = std::get_if<uint64_t>(&data_))
    return *u;
  if (auto i = std::get_if<int64_t>(&data_); i && *i >= 0)
    return static_cast<uint64_t>(*i);
  return std::nullopt;
}

std::optional<int64_t> value::to_int() const noexcept {
  if (auto i = std::get_if<int64_t>(&data_))
    return *i;
  if (auto u = std::get_if<uint64_t>(&data_); u && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(*u);
  return std::nullopt;
}

std::optional<double> value::to_double() const noexcept {
  if (auto f = std::get_if<double>(&data_))
    return *f;
  if (auto u = std::get_if<uint64_t>(&data_))
    return static_cast<double>(*u);
  if (auto i = std::get_if<int64_t>(&data_))
    return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> value::to_bool() const noexcept {
  if (auto b = std::get_if<bool>(&data_))
    return *b;
  if (auto u = to_uint(); u && *u <= 1)
    return *u == 1;
  return std::nullopt;
}

std::optional<std::string_view> value::to_string() const noexcept {
  if (auto s = std::get_if<std::string_view>(&data_))
    return *s;
  return std::nullopt;
}

std::string value::summary() const {
  if (auto a = to_array()) {
    if (a->items.size() > 8)
      return "[" + std::to_string(a->items.size()) + " x " + value_type_name(a->elem_type) + "]";
    std::string out = "[";
    for (size_t i = 0; i < a->items.size(); ++i)
      out += (i ? ", " : "") + a->items[i].summary();
    return out + "]";
  }
  if (auto s = to_string()) {
    std::string out = "\"";
    out.append(s->substr(0, 60));
    return out + (s->size() > 60 ? "...\"" : "\"");
  }
  if (auto b = std::get_if<bool>(&data_))
    return *b ? "true" : "false";
  if (auto f = std::get_if<double>(&data_))
    return std::to_string(*f);
  if (auto i = std::get_if<int64_t>(&data_))
    return std::to_string(*i);
  return std::to_string(std::get<uint64_t>(data_));
}

} // namespace dynamo::gguf
