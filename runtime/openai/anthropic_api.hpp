// The Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens)
// as a translation over chat completions: system, messages with text /
// tool_use / tool_result blocks, tools with input_schema, tool_choice,
// stop_sequences, max_tokens (required) become a chat body; the chat output
// becomes a message object or Anthropic's stream events (message_start, ping,
// content_block_start/delta/stop, message_delta, message_stop). Errors use
// Anthropic's envelope. Served only with --enable-anthropic-api. Called by
// the frontend; pure, any thread.
#pragma once

#include "runtime/openai/chat_dialect.hpp"

#include <string>
#include <string_view>

namespace dynamo::openai {

/// Errors: 400 naming the Anthropic field at fault (missing max_tokens,
/// unsupported block types such as images, server tools).
[[nodiscard]] expected<dialect_request> translate_anthropic_request(std::string_view body);

/// count_tokens: {model, messages, system?, tools?} as a chat body (no
/// max_tokens needed) whose prompt the caller counts.
[[nodiscard]] expected<std::string> translate_anthropic_count_request(std::string_view body);

/// {"type":"error","error":{"type":..,"message":..}}, the type from the HTTP
/// status (invalid_request_error, not_found_error, api_error, overloaded_error, ...).
[[nodiscard]] std::string anthropic_error_body(const api_error& e);

/// {"input_tokens":N}
[[nodiscard]] std::string anthropic_count_body(uint32_t input_tokens);

} // namespace dynamo::openai
