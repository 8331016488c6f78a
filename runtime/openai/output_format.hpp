// How a model writes tool calls and reasoning in its output: the formats we
// parse (Hermes/Qwen, Llama 3 JSON, Mistral), their detection from the chat
// template text, the override names (--tool-call-parser / --reasoning-parser),
// and the guided_decoding spec that forces a call in that format (tool_choice
// required / named). Called by the frontend (once per model) and preprocess.
// Pure functions; any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/tokenizer/chat_template.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::openai {

enum class tool_format : uint8_t {
  none = 0,    ///< tool calls are not parsed out of the output
  hermes,      ///< <tool_call>{"name": .., "arguments": {..}}</tool_call>, repeated (Qwen, Hermes)
  llama3_json, ///< {"name": .., "parameters": {..}}, optionally after <|python_tag|> (Llama 3.x)
  mistral,     ///< [TOOL_CALLS][{"name": .., "arguments": {..}}, ..] or [TOOL_CALLS]name[ARGS]{..}
};

/// What the output parser looks for in one model's output.
struct output_format {
  tool_format tools = tool_format::hermes; ///< used only for requests with tools
  bool reasoning = false;                  ///< <think>...</think> becomes reasoning_content
};

/// "none", "hermes", "llama3_json", "mistral".
[[nodiscard]] std::string_view tool_format_name(tool_format f) noexcept;
/// The inverse; errc::invalid_argument for other names.
[[nodiscard]] expected<tool_format> parse_tool_format(std::string_view name);

/// The format a chat template's text implies: [TOOL_CALLS] -> mistral;
/// <|python_tag|> or a Llama 3 header template asking for "parameters" ->
/// llama3_json; anything else (including <tool_call>, ChatML and templates
/// without tools) -> hermes, the generic choice. reasoning: the text mentions
/// <think>.
[[nodiscard]] output_format detect_output_format(std::string_view template_source);
/// The same for a loaded template (Jinja templates by their source; the
/// mocker's simple template gives the defaults).
[[nodiscard]] output_format detect_output_format(const tok::chat_template& tmpl);

/// Overrides as flags spell them: tool parser "auto" (detected) or a
/// tool_format name; reasoning parser "auto", "think" (on) or "none" (off).
/// errc::invalid_argument naming the bad value.
[[nodiscard]] expected<output_format> apply_overrides(output_format detected,
                                                      std::string_view tool_call_parser,
                                                      std::string_view reasoning_parser);

/// The protocol::guided_kind::tool_calls spec that forces calls in `f`
/// (see protocol/llm.hpp): `functions` is a list of {"name", "parameters"};
/// `parallel` allows more than one call (Llama 3 always makes one).
[[nodiscard]] std::string tool_calls_spec(tool_format f, const nlohmann::ordered_json& functions,
                                          bool parallel);

} // namespace dynamo::openai
