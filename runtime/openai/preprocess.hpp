// Turns a validated OpenAI request into the token-level preprocessed_request
// for one model: chat template, null-byte stripping, tokenization (special
// token text is parsed, for chat and completions alike), BOS, context-length check (prompt < context),
// max_tokens defaulting to the remaining context, stop tokens (the model's
// unless ignore_eos, and the client's stop_token_ids), token ids the client
// named checked against the vocabulary, the sampling options. Pure; any
// thread (tokenizers and templates are immutable).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/openai/output_format.hpp"
#include "runtime/openai/output_parser.hpp"
#include "runtime/openai/request.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/protocol/model_card.hpp"
#include "runtime/tokenizer/chat_template.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <string>

namespace dynamo::openai {

/// How a chat request's output is to be parsed (preprocess_chat decides).
struct chat_parsing {
  output_parser::options parser; ///< tools none unless the request offers tools (not tool_choice none)
  bool include_special = false;  ///< the call marker is a control token: keep control tokens' text
};

/// The chat is rendered with its tools and chat_template_kwargs; `fmt` (the
/// model's output_format) decides the parsing (`parsing`, when given) and,
/// for tool_choice required / named, sampling.guided (a tool_calls spec in
/// that format; named: that function only, one call).
/// Errors: invalid_argument (code context_length_exceeded when the prompt,
/// or prompt + max_tokens, does not fit; invalid_value for an empty prompt or
/// a token id >= vocab size in the prompt, logit_bias or stop_token_ids),
/// whatever the template reports, and config_error
/// for a card without a context length.
[[nodiscard]] expected<protocol::preprocessed_request>
preprocess_chat(const chat_request& req, const protocol::model_card& card,
                const tok::tokenizer& tk, const tok::chat_template& tmpl, std::string request_id,
                const output_format& fmt = {}, chat_parsing* parsing = nullptr);

/// Errors as preprocess_chat's, naming "prompt". With echo: sampling.prompt_logprobs
/// is the request's logprobs, and max_tokens 0 becomes 1 (the response
/// assembler drops that token: response_assembler::options::echo).
[[nodiscard]] expected<protocol::preprocessed_request>
preprocess_completion(const completion_request& req, const protocol::model_card& card,
                      const tok::tokenizer& tk, std::string request_id);

/// One /v1/embeddings input as an embed request (preprocessed_request::embed),
/// tokenized as a completion prompt; errors as preprocess_completion's, naming `param`.
[[nodiscard]] expected<protocol::preprocessed_request>
preprocess_embedding(const prompt_input& input, const protocol::model_card& card,
                     const tok::tokenizer& tk, std::string request_id, const std::string& param);

} // namespace dynamo::openai
