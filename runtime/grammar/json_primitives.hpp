// Internal to the JSON compilers: the shared JSON building blocks of one
// grammar (whitespace, strings, numbers, integer ranges, formats, any value).
// Rules are found by name so repeated additions to a grammar share them.
// Used by json_schema.cpp only; single-threaded like the grammar it builds.
#pragma once

#include "runtime/grammar/json_schema.hpp"

#include <optional>
#include <set>

namespace dynamo::gram::detail {

class json_blocks {
public:
  json_blocks(grammar& g, const json_options& o) : g_(g), o_(o) {}

  [[nodiscard]] grammar& g() noexcept { return g_; }
  [[nodiscard]] const json_options& options() const noexcept { return o_; }

  /// Whitespace after ':' and ',' / inside braces and before ':' ','.
  [[nodiscard]] expr_id ws_sep();
  [[nodiscard]] expr_id ws_in();
  /// ws_in "," ws_sep
  [[nodiscard]] expr_id comma();
  /// ws_in ":" ws_sep
  [[nodiscard]] expr_id colon();

  /// One code point of string content, as JSON writes it (raw or escaped).
  [[nodiscard]] expr_id string_char();
  [[nodiscard]] rule_id string();  ///< any JSON string
  [[nodiscard]] rule_id number();  ///< any JSON number (bounded digit counts)
  [[nodiscard]] rule_id integer(); ///< any integer of at most 16 digits
  [[nodiscard]] rule_id value();
  [[nodiscard]] rule_id object();
  [[nodiscard]] rule_id array();

  /// "..." with lo..hi code points (hi may be grammar::unbounded).
  [[nodiscard]] expr_id string_length(uint32_t lo, uint32_t hi);
  /// A string key (simple characters [A-Za-z0-9_-], 1+ long) that is none of `names`.
  [[nodiscard]] expr_id key_excluding(const std::set<std::string>& names);
  /// The regex (without quotes) for a known `format`, or nullopt.
  [[nodiscard]] static std::optional<std::string_view> format_regex(std::string_view format);

  /// Integers lo..hi (JSON form: no leading zeros, '-' for negatives).
  [[nodiscard]] expr_id int_range(int64_t lo, int64_t hi);
  /// Digit strings without leading zeros for lo..hi (both >= 0).
  [[nodiscard]] expr_id nonneg_range(uint64_t lo, uint64_t hi);
  /// [0-9]{1,16}: the digits after a decimal point.
  [[nodiscard]] expr_id fraction_digits();

  /// The largest magnitude integer rules produce: 16 digits.
  static constexpr int64_t max_int = 9999999999999999;

private:
  [[nodiscard]] std::string suffix() const;
  [[nodiscard]] std::optional<rule_id> existing(const std::string& name) const { return g_.find_rule(name); }
  [[nodiscard]] expr_id same_length(const std::string& lo, const std::string& hi);
  [[nodiscard]] expr_id digits() { return g_.byte_range('0', '9'); }

  grammar& g_;
  json_options o_;
};

} // namespace dynamo::gram::detail
