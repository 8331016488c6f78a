// Operators, filters, tests, functions and methods of the Jinja subset, with
// Python semantics where chat templates depend on them. Internal to the
// jinja_* files. Pure functions over values; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/tokenizer/jinja_value.hpp"

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::tok::jinja {

/// What one operation may build: a string's bytes, a list's items (a string
/// iterated counts its characters). Larger fails the render before it allocates.
inline constexpr size_t max_string_bytes = size_t{1} << 24;
inline constexpr size_t max_list_items = size_t{1} << 20;

/// Python str operations the filters and methods share.
namespace text {
/// str.isspace(): White_Space plus \x1c..\x1f.
[[nodiscard]] bool is_python_space(char32_t cp) noexcept;
/// str.strip / lstrip / rstrip; `chars` null: whitespace.
[[nodiscard]] std::string strip(const std::string& s, bool left, bool right, const std::string* chars);
/// str.upper / str.lower (ASCII letters; other characters unchanged).
[[nodiscard]] std::string change_case(std::string s, bool upper);
/// str.title (every word) / str.capitalize (first letter only, rest lowered).
[[nodiscard]] std::string title_case(std::string s, bool every_word);
/// str.replace; fails (at `line`) when the result would pass max_string_bytes.
[[nodiscard]] expected<std::string> replace_all(const std::string& s, const std::string& from, const std::string& to,
                                                int line);
[[nodiscard]] size_t count_code_points(const std::string& s);
/// One step of a join (the filter and str.join): `sep` (unless `first`), then
/// `item`, onto `out`; fails (at `line`) when `out` would pass max_string_bytes.
[[nodiscard]] expected<void> join_append(std::string& out, bool first, const std::string& sep, const std::string& item,
                                         int line);
/// `s | join(sep)`: the characters of `s` with `sep` between them, sized before
/// it allocates (no list of characters); fails like join_append.
[[nodiscard]] expected<std::string> join_characters(const std::string& s, const std::string& sep, int line);
/// The first / last character of `s` (undefined when empty), without iterating it all.
[[nodiscard]] value first_character(const std::string& s);
[[nodiscard]] value last_character(const std::string& s);
} // namespace text

/// errc::invalid_argument "chat template line N: what".
[[nodiscard]] caf::error fail(int line, const std::string& what);

/// The items a for loop visits (list items, dict keys, string characters; undefined: none).
/// ASCII characters of a string are shared one-character values (no allocation each).
[[nodiscard]] expected<std::vector<value>> iterate(const value& v, int line);

/// `args[0] | name(args[1..])`; `kwnames[i]` is the keyword of args[i + 1]
/// ("" for positional; may be shorter than args when there are none).
[[nodiscard]] expected<value> apply_filter(std::string_view name, const std::vector<value>& args,
                                           const std::vector<std::string>& kwnames, int line);

/// `v is name(args...)`.
[[nodiscard]] expected<bool> apply_test(std::string_view name, const value& v, const std::vector<value>& args,
                                        int line);

/// json.dumps(v, ensure_ascii=, indent=, separators=, sort_keys=), as HF's
/// tojson filter calls it. Errors: values JSON cannot hold (undefined, functions).
struct json_options {
  bool ensure_ascii = false;
  std::optional<std::string> indent; ///< the indent unit (indent=N: N spaces)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
[[nodiscard]] expected<std::string> to_json(const value& v, const json_options& opt, int line);

/// Unary minus (negate) or plus on a number.
[[nodiscard]] expected<value> negate_number(const value& v, bool negate, int line);

/// Arithmetic, ~, comparisons, in / not in.
[[nodiscard]] expected<value> binary_op(std::string_view op, const value& a, const value& b, int line);

/// obj[key]: undefined when absent or out of range (negative list indexes count from the end).
[[nodiscard]] value index_value(const value& obj, const value& key);

/// obj[start:stop:step] on lists and strings (undefined bounds are omitted ones).
[[nodiscard]] expected<value> slice_value(const value& obj, const value& start, const value& stop,
                                          const value& step, int line);

/// self.name(args): string and dict methods.
[[nodiscard]] expected<value> call_method(const value& self, std::string_view name, const std::vector<value>& args,
                                          int line);

/// The global functions every template sees (as function_ref values).
[[nodiscard]] const std::vector<std::string_view>& global_function_names();

/// Global functions: raise_exception(msg), strftime_now(format) (the time is
/// `now`, or the current local time), namespace(k=v, ...), dict(k=v, ...),
/// range(...). `names[i]` is the keyword of args[i] ("" for positional).
[[nodiscard]] expected<value> call_function(std::string_view name, const std::vector<value>& args,
                                            const std::vector<std::string>& names, int line,
                                            const std::optional<std::tm>& now);

} // namespace dynamo::tok::jinja
