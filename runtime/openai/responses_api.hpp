// The OpenAI Responses API (POST /v1/responses) as a translation over chat
// completions: the request (input string or items: messages, function_call,
// function_call_output; instructions; function tools; tool_choice;
// text.format; max_output_tokens; include message.output_text.logprobs and
// top_logprobs; reasoning.effort) becomes a chat body, and the chat output
// becomes a response object (a reasoning item when the model thought, the
// message with its logprobs, function calls), or the typed stream events
// (response.created ... response.completed, each with sequence_number).
// Stateless: store is false, previous_response_id is refused. Called by the
// frontend's request actor; pure, any thread.
#pragma once

#include "runtime/openai/chat_dialect.hpp"

#include <string_view>

namespace dynamo::openai {

/// Errors: 400 with the OpenAI envelope naming the Responses field at fault
/// (invalid_json, invalid_type, missing_required_parameter, unsupported_value
/// for hosted tools, non-text input parts, previous_response_id, background,
/// include values other than message.output_text.logprobs).
[[nodiscard]] expected<dialect_request> translate_responses_request(std::string_view body);

} // namespace dynamo::openai
