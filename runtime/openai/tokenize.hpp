// POST /tokenize and /detokenize in vLLM's shapes: the request parsers and
// the answers computed with the model's tokenizer (and chat template for
// `messages`). Called by the frontend's tokenize handler off the io thread.
// Pure functions; any thread (tokenizers and templates are immutable).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/model_card.hpp"
#include "runtime/tokenizer/chat_template.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::openai {

/// {model, prompt | messages, add_special_tokens?, add_generation_prompt?}
struct tokenize_request {
  std::string model;
  std::optional<std::string> prompt;        ///< exactly one of prompt and messages
  tok::chat_input chat;                     ///< messages (and tools, kwargs), rendered through the chat template
  /// The model's BOS/EOS additions. vLLM's defaults: true for a prompt, false
  /// for messages (the template writes them).
  bool add_special_tokens = true;
  bool add_generation_prompt = true; ///< messages only
};

/// {model, tokens: [ids]}
struct detokenize_request {
  std::string model;
  std::vector<uint32_t> tokens;
};

[[nodiscard]] expected<tokenize_request> parse_tokenize_request(std::string_view body);
[[nodiscard]] expected<detokenize_request> parse_detokenize_request(std::string_view body);

/// {"tokens":[...],"count":N,"max_model_len":context_length}. Errors: what the
/// chat template reports (400 on `messages`).
[[nodiscard]] expected<std::string> tokenize_body(const tokenize_request& req,
                                                  const protocol::model_card& card,
                                                  const tok::tokenizer& tk,
                                                  const tok::chat_template& tmpl);

/// {"prompt":"..."} (special tokens included, as vLLM). 400 `invalid_value`
/// for an id not below the vocabulary size.
[[nodiscard]] expected<std::string> detokenize_body(const detokenize_request& req,
                                                    const tok::tokenizer& tk);

/// The number of prompt tokens a chat would take (Anthropic's count_tokens):
/// the template with the generation prompt, encoded as the chat path does.
[[nodiscard]] expected<uint32_t> count_chat_tokens(tok::chat_input chat,
                                                   const tok::tokenizer& tk,
                                                   const tok::chat_template& tmpl);

} // namespace dynamo::openai
