// Values of the Jinja-subset interpreter behind jinja_chat_template: Python-
// like undefined/none/bool/int/float/string/list/dict with Jinja's truthiness,
// equality and printing. Strings, lists and dicts are shared (a copy never
// copies their contents: what a template costs is what it builds); a value is
// used by one render at a time (no internal locking).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dynamo::tok::jinja {

struct value;
using list = std::vector<value>;
using dict = std::vector<std::pair<std::string, value>>; ///< insertion-ordered

struct undefined {};
struct none {};
/// A global function (raise_exception, strftime_now, range, namespace, dict):
/// a value so that `strftime_now is defined` holds and it can be called.
struct function_ref {
  std::string name;
};

struct value {
  using shared_string = std::shared_ptr<const std::string>; ///< immutable once built
  std::variant<undefined, none, bool, int64_t, double, shared_string, std::shared_ptr<list>, std::shared_ptr<dict>,
               function_ref>
      v;

  value() = default;
  value(none n) : v(n) {}
  value(bool b) : v(b) {}
  value(int64_t i) : v(i) {}
  value(double d) : v(d) {}
  value(std::string s) : v(std::make_shared<const std::string>(std::move(s))) {}
  value(const char* s) : value(std::string(s)) {}
  value(list l) : v(std::make_shared<list>(std::move(l))) {}
  value(dict d) : v(std::make_shared<dict>(std::move(d))) {}
  value(function_ref f) : v(std::move(f)) {}

  [[nodiscard]] bool is_undefined() const noexcept { return std::holds_alternative<undefined>(v); }
  [[nodiscard]] bool is_none() const noexcept { return std::holds_alternative<none>(v); }
  [[nodiscard]] bool is_string() const noexcept { return std::holds_alternative<shared_string>(v); }
  [[nodiscard]] bool is_number() const noexcept;
  [[nodiscard]] const std::string* as_string() const noexcept {
    auto p = std::get_if<shared_string>(&v);
    return p ? p->get() : nullptr;
  }
  [[nodiscard]] const list* as_list() const noexcept;
  [[nodiscard]] dict* as_dict() const noexcept;
  [[nodiscard]] const function_ref* as_function() const noexcept { return std::get_if<function_ref>(&v); }

  /// Jinja truthiness: undefined, none, false, 0, "", [] and {} are false.
  [[nodiscard]] bool truthy() const noexcept;
  /// What {{ v }} prints: undefined -> "", none -> "None", True/False, Python
  /// reprs for lists/dicts. Containers nested deeper than `max_print_depth`
  /// print as "..." and output stops near `max_print_bytes` (cyclic namespaces).
  [[nodiscard]] std::string to_output() const;
  /// Python repr (strings quoted), used inside list/dict printing.
  [[nodiscard]] std::string repr() const;
  /// Type name for error messages ("string", "int", "list", ...).
  [[nodiscard]] std::string_view type_name() const noexcept;
  /// The element of a dict by key (undefined when absent or not a dict).
  [[nodiscard]] value get(std::string_view key) const;
};

inline constexpr int max_print_depth = 64;
inline constexpr size_t max_print_bytes = size_t{1} << 24;
/// Deepest container nesting a template may build (list/dict literals, items()).
inline constexpr int max_nesting = 32;

/// Python's repr() of a float ("1.0", "1e+16", "0.30000000000000004").
[[nodiscard]] std::string format_double(double d);

/// Python's repr() of a string (quotes chosen as Python does, escapes for
/// backslash, the quote, \n \r \t and other unprintable characters).
[[nodiscard]] std::string python_quote(std::string_view s);

/// Python == (1 == True, 1 == 1.0; lists and dicts element-wise). Comparisons
/// that would visit more than a million elements (cyclic namespaces) are false.
[[nodiscard]] bool equals(const value& a, const value& b);

/// True when `v` holds containers nested more than `limit` deep (visits at
/// most `limit` levels and a million containers, so it ends on cycles).
[[nodiscard]] bool nested_deeper_than(const value& v, int limit);

/// True when `target` is `v` or is inside it within max_nesting levels
/// (used to refuse {% set ns.x = ns %} and other cycles).
[[nodiscard]] bool holds(const value& v, const dict* target);

} // namespace dynamo::tok::jinja
