// One GGUF metadata value (scalar, string or possibly nested array) as parsed
// from a file. Strings are views into the file's bytes: a value lives as long
// as the gguf::file it came from. Immutable after parsing; safe to share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dynamo::gguf {

/// GGUF metadata value types (`gguf_type`), with their on-disk ids.
enum class value_type : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

/// "u32", "string", "array", ... (or "type<N>" for an unknown id).
[[nodiscard]] std::string value_type_name(value_type t);

class value {
public:
  struct array {
    value_type elem_type = value_type::u8;
    std::vector<value> items;
  };

  value() = default;
  value(value_type type, uint64_t u) : type_(type), data_(u) {}
  value(value_type type, int64_t i) : type_(type), data_(i) {}
  value(value_type type, double f) : type_(type), data_(f) {}
  explicit value(bool b) : type_(value_type::boolean), data_(b) {}
  explicit value(std::string_view s) : type_(value_type::string), data_(s) {}
  explicit value(array a) : type_(value_type::array), data_(std::move(a)) {}

  [[nodiscard]] value_type type() const noexcept { return type_; }
  [[nodiscard]] bool is_integer() const noexcept;

  /// The integer of any integer type, if it fits in the target (no floats).
  [[nodiscard]] std::optional<uint64_t> to_uint() const noexcept;
  [[nodiscard]] std::optional<int64_t> to_int() const noexcept;
  /// f32/f64, or an integer converted to double.
  [[nodiscard]] std::optional<double> to_double() const noexcept;
  /// A bool, or an integer 0/1.
  [[nodiscard]] std::optional<bool> to_bool() const noexcept;
  [[nodiscard]] std::optional<std::string_view> to_string() const noexcept;
  [[nodiscard]] const array* to_array() const noexcept { return std::get_if<array>(&data_); }

  /// Short human form for logs and dumps ("[49152 x string]" for long arrays).
  [[nodiscard]] std::string summary() const;

private:
  value_type type_ = value_type::u8;
  std::variant<uint64_t, int64_t, double, bool, std::string_view, array> data_{uint64_t{0}};
};

} // namespace dynamo::gguf
