// JSON grammars: any JSON value / object (response_format json_object), a JSON
// Schema (json_schema, strict), and tool calls ({"name", "arguments"} objects,
// alone or in arrays) as composable rules. Called by the API layer (and tests);
// pure functions over a grammar being built.
#pragma once

#include "runtime/grammar/grammar.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dynamo::gram {

/// Where JSON output may hold whitespace. Whitespace is always bounded so a
/// small model cannot loop on it forever.
enum class json_whitespace : uint8_t {
  none,         ///< {"a":1,"b":[2,3]}
  single_space, ///< at most one space after ':' and ',' (default): {"a": 1, "b": [2, 3]}
  flexible,     ///< up to json_options::max_whitespace of [ \t\n\r] around every ':' ',' and inside braces
};

struct json_options {
  json_whitespace whitespace = json_whitespace::single_space;
  uint32_t max_whitespace = 16;      ///< flexible: the bound per position
  uint32_t max_extra_properties = 16; ///< properties beyond `properties` when additionalProperties allows them
};

/// The rule for any JSON value (shared when added twice to one grammar).
[[nodiscard]] rule_id add_json_value(grammar& g, const json_options& o = {});
/// The rule for any JSON object.
[[nodiscard]] rule_id add_json_object(grammar& g, const json_options& o = {});

/// A rule named `name` matching the JSON texts valid under `schema_json`.
/// Errors: errc::invalid_argument for malformed JSON or schema (naming the
/// JSON pointer path), errc::unsupported naming a keyword or construct we do
/// not support (docs/STRUCTURED_OUTPUTS.md lists the subset).
[[nodiscard]] expected<rule_id> add_json_schema(grammar& g, std::string_view schema_json, const json_options& o = {},
                                                std::string_view name = "schema");

/// A whole grammar for json_object (any JSON object).
[[nodiscard]] grammar json_object_grammar(const json_options& o = {});
/// A whole grammar for one schema.
[[nodiscard]] expected<grammar> json_schema_grammar(std::string_view schema_json, const json_options& o = {});

/// One function a tool call may name.
struct tool_function {
  std::string name;
  std::string parameters_json = "{}"; ///< JSON Schema of the arguments object
};

/// A rule for one call {"name": "<one of the names>", "<arguments_key>": <its schema>}
/// ("arguments" for Hermes/Mistral, "parameters" for Llama 3).
/// Errors: add_json_schema's, and errc::invalid_argument for no functions.
[[nodiscard]] expected<rule_id> add_tool_call(grammar& g, const std::vector<tool_function>& fns,
                                              const json_options& o = {}, std::string_view arguments_key = "arguments");
/// A rule for a JSON array of calls `[call, call, ...]` (parallel calls), 1..max_calls long.
[[nodiscard]] expected<rule_id> add_tool_call_array(grammar& g, const std::vector<tool_function>& fns,
                                                    const json_options& o = {}, uint32_t max_calls = grammar::unbounded,
                                                    std::string_view arguments_key = "arguments");
/// A whole grammar: one call, or an array of calls when `parallel`.
[[nodiscard]] expected<grammar> tool_call_grammar(const std::vector<tool_function>& fns, bool parallel,
                                                  const json_options& o = {});

} // namespace dynamo::gram
