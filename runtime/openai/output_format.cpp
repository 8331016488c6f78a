#include "runtime/openai/output_format.hpp"

#include "runtime/tokenizer/jinja_chat_template.hpp"

namespace dynamo::openai {

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

} // namespace

std::string_view tool_format_name(tool_format f) noexcept {
  switch (f) {
    case tool_format::none: return "none";
    case tool_format::hermes: return "hermes";
    case tool_format::llama3_json: return "llama3_json";
    case tool_format::mistral: return "mistral";
  }
  return "none";
}

expected<tool_format> parse_tool_format(std::string_view name) {
  for (auto f : {tool_format::none, tool_format::hermes, tool_format::llama3_json, tool_format::mistral})
    if (tool_format_name(f) == name)
      return f;
  return make_error(errc::invalid_argument, "unknown tool call parser '" + std::string(name) +
                                                "' (expected auto, none, hermes, llama3_json or mistral)");
}

output_format detect_output_format(std::string_view src) {
  output_format f;
  if (contains(src, "[TOOL_CALLS]"))
    f.tools = tool_format::mistral;
  else if (contains(src, "<|python_tag|>") ||
           (contains(src, "<|start_header_id|>") && contains(src, "\"parameters\"")))
    f.tools = tool_format::llama3_json;
  else
    f.tools = tool_format::hermes;
  f.reasoning = contains(src, "<think>");
  return f;
}

output_format detect_output_format(const tok::chat_template& tmpl) {
  if (const auto* j = dynamic_cast<const tok::jinja_chat_template*>(&tmpl))
    return detect_output_format(j->source());
  return {};
}

expected<output_format> apply_overrides(output_format detected, std::string_view tool_call_parser,
                                        std::string_view reasoning_parser) {
  if (!tool_call_parser.empty() && tool_call_parser != "auto") {
    auto f = parse_tool_format(tool_call_parser);
    if (!f)
      return std::move(f.error());
    detected.tools = *f;
  }
  if (reasoning_parser == "none")
    detected.reasoning = false;
  else if (reasoning_parser == "think")
    detected.reasoning = true;
  else if (!reasoning_parser.empty() && reasoning_parser != "auto")
    return make_error(errc::invalid_argument, "unknown reasoning parser '" + std::string(reasoning_parser) +
                                                  "' (expected auto, think or none)");
  return detected;
}

std::string tool_calls_spec(tool_format f, const nlohmann::ordered_json& functions, bool parallel) {
  nlohmann::ordered_json spec{{"functions", functions}};
  switch (f) {
    case tool_format::llama3_json:
      spec.update({{"begin", ""}, {"end", ""}, {"separator", "; "}, {"max_calls", 1},
                   {"array", false}, {"arguments_key", "parameters"}});
      break;
    case tool_format::mistral:
      spec.update({{"begin", "[TOOL_CALLS]"}, {"end", ""}, {"separator", ", "},
                   {"max_calls", parallel ? 0 : 1}, {"array", true}, {"arguments_key", "arguments"}});
      break;
    case tool_format::none:
    case tool_format::hermes:
      spec.update({{"begin", "<tool_call>\n"}, {"end", "\n</tool_call>"}, {"separator", "\n"},
                   {"max_calls", parallel ? 0 : 1}, {"array", false}, {"arguments_key", "arguments"}});
      break;
  }
  return spec.dump();
}

} // namespace dynamo::openai
