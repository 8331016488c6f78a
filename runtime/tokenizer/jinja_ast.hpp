// The Jinja subset that chat templates in GGUF files use: a parsed program
// (text, {{ expr }}, if/elif/else, for with loop.* and break/continue, set,
// namespace()) and its renderer. Internal to jinja_chat_template; a parsed program is immutable and
// may be rendered from many threads at once.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/tokenizer/jinja_value.hpp"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dynamo::tok::jinja {

enum class expr_kind { literal, name, attr, index, slice, call, filter, test, unary, binary, ternary, list, dict };

struct expr;
using expr_ptr = std::unique_ptr<expr>;

/// One expression node. Children and the meaning of `name` depend on `kind`:
/// attr: args[0].name; index: args[0][args[1]]; slice: args[0][args[1]:args[2]:args[3]]
/// (null = omitted); call: args[0](args[1..]); filter/test: name(args[0], args[1..]);
/// (tuples are lists);
/// unary/binary: operator `name`; ternary: args[1] if args[0] else args[2];
/// list: items; dict: key, value, key, value, ...
struct expr {
  expr_kind kind = expr_kind::literal;
  int line = 0;
  std::string name;
  value literal;
  std::vector<expr_ptr> args;
  std::vector<std::string> kwarg_names; ///< call/filter: keyword of args[i+1] ("" = positional)
  bool negate = false;                  ///< `is not` tests
};

enum class node_kind { text, output, if_chain, for_loop, set, break_loop, continue_loop };

struct node {
  node_kind kind = node_kind::text;
  int line = 0;
  std::string text;                                              ///< text
  expr_ptr e;                                                    ///< output / set value / for iterable
  std::vector<std::pair<expr_ptr, std::vector<node>>> branches;  ///< if/elif; for: one, with its `if` filter or null
  std::vector<node> else_body;                                   ///< if-else / for-else
  std::vector<std::string> targets;                              ///< for: loop vars; set: name or {ns, attr}
};

struct program {
  std::vector<node> body;
};

/// Parses template source with Jinja's whitespace control and HF's settings
/// (trim_blocks, lstrip_blocks). Errors: errc::invalid_argument for syntax
/// errors, errc::unsupported for valid Jinja we do not implement; both name
/// the line.
[[nodiscard]] expected<std::shared_ptr<const program>> parse(std::string_view source);

using globals = std::vector<std::pair<std::string, value>>;

/// Renders `p` with the given global variables (over the global functions,
/// see global_function_names). strftime_now() formats `now`, or the current
/// local time when unset. Errors (errc::invalid_argument): raise_exception(msg)
/// from the template, or a type or undefined-value error naming the line.
[[nodiscard]] expected<std::string> render(const program& p, const globals& g, const std::optional<std::tm>& now = {});

} // namespace dynamo::tok::jinja
