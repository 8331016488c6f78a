// Operators, filters, tests, functions and methods of the Jinja subset, with
// Python semantics where chat templates depend on them. Internal to the
// jinja_* files. Pure functions over values; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/tokenizer/jinja_value.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dynamo::tok::jinja {

/// errc::invalid_argument "chat template line N: what".
[[nodiscard]] caf::error fail(int line, const std::string& what);

/// The items a for loop visits (list items, dict keys, string characters; undefined: none).
[[nodiscard]] expected<std::vector<value>> iterate(const value& v, int line);

/// `args[0] | name(args[1..])`.
[[nodiscard]] expected<value> apply_filter(std::string_view name, const std::vector<value>& args, int line);

/// `v is name`.
[[nodiscard]] bool apply_test(std::string_view name, const value& v);

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

/// Global functions: raise_exception(msg), namespace(k=v, ...), range(...).
/// `names[i]` is the keyword of args[i] ("" for positional).
[[nodiscard]] expected<value> call_function(std::string_view name, const std::vector<value>& args,
                                            const std::vector<std::string>& names, int line);

} // namespace dynamo::tok::jinja
