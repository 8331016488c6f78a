// Native request types for POST /v1/chat/completions and /v1/completions, and
// their parsers: JSON text in, a validated value or a field-precise error out
// (errc + `param` + OpenAI `code`, see error.hpp). Model-dependent checks
// (prompt length, token ids < vocab) happen later, in preprocess.hpp.
// Pure functions; any thread.
//
// Field policy (documented in docs and /openapi.json):
//  - implemented: model, messages / prompt, max_tokens, max_completion_tokens,
//    min_tokens, temperature, top_p, top_k, min_p, seed, stop, stop_token_ids,
//    n (1..128), presence_penalty, frequency_penalty, repetition_penalty,
//    logit_bias, logprobs (+ top_logprobs for chat), stream, echo
//    (completions, n = 1; with logprobs it scores the prompt too),
//    stream_options.include_usage, ignore_eos, user; chat: tools,
//    tool_choice, parallel_tool_calls, chat_template_kwargs, assistant
//    tool_calls and tool messages in the history (docs/TOOLS.md);
//    response_format (text, json_object, json_schema) and guided_json /
//    guided_regex / guided_choice / guided_grammar, top level or under nvext
//    (docs/STRUCTURED_OUTPUTS.md);
//  - known OpenAI fields we do not implement (best_of != n, suffix, ...) are accepted only at their neutral value;
//    anything else is 400 `unsupported_value`, so a client never silently
//    gets different behaviour than it asked for;
//  - unknown top-level fields are ignored, as OpenAI-compatible servers do
//    (clients send vendor extensions such as `nvext` through extra_body).
//  - wrong JSON types are 400 with code `invalid_type` (OpenAI's choice; Dynamo
//    also rewrites 422 to 400), bad JSON is 400 `invalid_json`.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/tokenizer/chat_template.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dynamo::openai {

/// Limits from Dynamo's validate.rs.
inline constexpr size_t max_stop_sequences = 32;
inline constexpr uint32_t max_n = 128;            ///< choices per request
inline constexpr uint32_t max_completion_logprobs = 5; ///< /v1/completions `logprobs`
inline constexpr size_t max_json_depth = 64; ///< deeper bodies are rejected before parsing

/// Options shared by both endpoints, after validation.
struct generation_params {
  /// >= 1 (0 with echo: the prompt alone); max_completion_tokens wins over max_tokens
  std::optional<uint32_t> max_tokens;
  std::optional<uint32_t> min_tokens; ///< <= max_tokens when both are set
  std::optional<float> temperature;   ///< [0, 2]; 0 is greedy
  std::optional<float> top_p;         ///< [0, 1]
  std::optional<int32_t> top_k;       ///< -1 (off) or >= 1
  std::optional<uint64_t> seed;       ///< any JSON integer, two's complement for negatives
  std::optional<float> min_p;         ///< [0, 1]
  std::optional<float> presence_penalty;   ///< [-2, 2]
  std::optional<float> frequency_penalty;  ///< [-2, 2]
  std::optional<float> repetition_penalty; ///< (0, 2]
  /// logit_bias: token id -> bias in [-100, 100], sorted by id, at most
  /// protocol::max_logit_bias; ids are checked against the vocabulary later.
  std::vector<protocol::token_bias> logit_bias;
  /// Alternatives per token when logprobs are asked for (chat: top_logprobs
  /// 0..20 with logprobs=true; completions: logprobs 0..5); nullopt: none.
  std::optional<uint32_t> logprobs;
  uint32_t n = 1;                     ///< choices, 1..max_n
  std::vector<std::string> stop;      ///< at most max_stop_sequences
  std::vector<uint32_t> stop_token_ids; ///< vLLM's: more ids that end generation (any < vocab)
  bool stream = false;
  bool include_usage = false; ///< stream_options.include_usage (stream only)
  bool ignore_eos = false;
  std::optional<std::string> user; ///< non-empty when present
  /// response_format json_object / json_schema, or guided_json / guided_regex /
  /// guided_choice / guided_grammar (top level or under nvext); validated.
  protocol::guided_decoding guided;
  /// /v1/completions echo: the choice's text (and logprobs, whose prompt
  /// part is sampling.prompt_logprobs) starts with the prompt.
  bool echo = false;
};

/// tool_choice: "none" (tools are still rendered, as vLLM, but the output is
/// not parsed for calls), "auto", "required" or a named function.
enum class tool_choice_mode : uint8_t { none, automatic, required, named };

struct chat_request {
  std::string model;
  /// What the chat template renders: messages (non-empty; each content a
  /// string with text parts joined by "\n", "" for an assistant turn without
  /// content; tool_calls with arguments as an object when they parse as one,
  /// as vLLM passes them), tools (null without tools), kwargs
  /// (chat_template_kwargs), add_generation_prompt.
  tok::chat_input chat;
  tool_choice_mode tool_choice = tool_choice_mode::automatic; ///< none when no tools
  std::string tool_name;            ///< the named function (tool_choice named)
  bool parallel_tool_calls = true;
  generation_params params;
};

/// One completion prompt: text, or token ids given by the client.
using prompt_input = std::variant<std::string, std::vector<uint32_t>>;

struct completion_request {
  std::string model;
  prompt_input prompt;
  generation_params params;
};

[[nodiscard]] expected<chat_request> parse_chat_request(std::string_view body);
[[nodiscard]] expected<completion_request> parse_completion_request(std::string_view body);

/// The top-level fields each endpoint understands (implemented or neutral-only);
/// /openapi.json documents exactly these.
[[nodiscard]] std::span<const std::string_view> chat_request_fields() noexcept;
[[nodiscard]] std::span<const std::string_view> completion_request_fields() noexcept;

/// Roles accepted in chat messages.
[[nodiscard]] std::span<const std::string_view> chat_roles() noexcept;

} // namespace dynamo::openai
