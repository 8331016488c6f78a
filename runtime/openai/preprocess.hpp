// Turns a validated OpenAI request into the token-level preprocessed_request
// for one model: chat template, null-byte stripping, tokenization (special
// token text is parsed, for chat and completions alike), BOS, context-length check (prompt < context),
// max_tokens defaulting to the remaining context, stop tokens (the model's
// unless ignore_eos, and the client's stop_token_ids), token ids the client
// named checked against the vocabulary, the sampling options. Pure; any
// thread (tokenizers and templates are immutable).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/openai/request.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/protocol/model_card.hpp"
#include "runtime/tokenizer/chat_template.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <string>

namespace dynamo::openai {

/// Errors: invalid_argument (code context_length_exceeded when the prompt,
/// or prompt + max_tokens, does not fit; invalid_value for an empty prompt or
/// a token id >= vocab size in the prompt, logit_bias or stop_token_ids),
/// whatever the template reports, and config_error
/// for a card without a context length.
[[nodiscard]] expected<protocol::preprocessed_request>
preprocess_chat(const chat_request& req, const protocol::model_card& card,
                const tok::tokenizer& tk, const tok::chat_template& tmpl, std::string request_id);

[[nodiscard]] expected<protocol::preprocessed_request>
preprocess_completion(const completion_request& req, const protocol::model_card& card,
                      const tok::tokenizer& tk, std::string request_id);

} // namespace dynamo::openai
