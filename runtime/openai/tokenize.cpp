#include "runtime/openai/tokenize.hpp"

#include "runtime/openai/json_fields.hpp"
#include "runtime/openai/request.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace dynamo::openai {

namespace {

using detail::json;

using detail::dump;

/// The chat template's text, its invalid_argument errors naming `messages`.
expected<std::string> render(tok::chat_input chat, bool generation_prompt, const tok::chat_template& tmpl) {
  chat.add_generation_prompt = generation_prompt;
  auto text = tmpl.render(chat);
  if (!text && code_of(text.error()) == errc::invalid_argument)
    return field_error(errc::invalid_argument, "messages", codes::invalid_value,
                       message_of(text.error()));
  return text;
}

std::vector<uint32_t> encode(std::string text, const tok::tokenizer& tk, bool add_special) {
  std::erase(text, '\0'); // as the generation path does
  return add_special ? tk.encode_prompt(text, /*parse_special=*/true)
                     : tk.encode(text, /*parse_special=*/true);
}

} // namespace

expected<tokenize_request> parse_tokenize_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  tokenize_request out;
  if (auto err = detail::read_model(*obj, out.model))
    return err;
  const bool has_messages = detail::field(*obj, "messages") != nullptr;
  if (auto err = detail::read_string(*obj, "prompt", out.prompt))
    return err;
  if (has_messages == out.prompt.has_value())
    return field_error(errc::invalid_argument, "prompt",
                       has_messages ? codes::invalid_value : codes::missing_required_parameter,
                       "Exactly one of 'prompt' and 'messages' is required.");
  if (has_messages) {
    auto chat = parse_chat_request(body); // the chat endpoint's message rules
    if (!chat)
      return std::move(chat.error());
    out.chat = std::move(chat->chat);
    out.add_special_tokens = false;
  }
  std::optional<bool> flag;
  if (auto err = detail::read_bool(*obj, "add_special_tokens", flag))
    return err;
  if (flag)
    out.add_special_tokens = *flag;
  flag.reset();
  if (auto err = detail::read_bool(*obj, "add_generation_prompt", flag))
    return err;
  if (flag)
    out.add_generation_prompt = *flag;
  return out;
}

expected<detokenize_request> parse_detokenize_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  detokenize_request out;
  if (auto err = detail::read_model(*obj, out.model))
    return err;
  const json* tokens = detail::field(*obj, "tokens");
  if (!tokens)
    return detail::missing_error("tokens");
  if (!tokens->is_array())
    return detail::type_error("tokens", "an array of integers", *tokens);
  out.tokens.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const json& t = (*tokens)[i];
    if (!t.is_number_unsigned() || t.get<uint64_t>() > UINT32_MAX)
      return detail::type_error(fmt::format("tokens[{}]", i), "a non-negative integer", t);
    out.tokens.push_back(t.get<uint32_t>());
  }
  return out;
}

expected<std::string> tokenize_body(const tokenize_request& req, const protocol::model_card& card,
                                    const tok::tokenizer& tk, const tok::chat_template& tmpl) {
  std::string text;
  if (req.prompt) {
    text = *req.prompt;
  } else {
    auto rendered = render(req.chat, req.add_generation_prompt, tmpl);
    if (!rendered)
      return std::move(rendered.error());
    text = std::move(*rendered);
  }
  auto ids = encode(std::move(text), tk, req.add_special_tokens);
  json j = json::object();
  j["count"] = ids.size();
  j["max_model_len"] = card.context_length;
  j["tokens"] = ids;
  j["token_strs"] = nullptr; // vLLM's: only with return_token_strs
  return dump(j);
}

expected<std::string> detokenize_body(const detokenize_request& req, const tok::tokenizer& tk) {
  const uint32_t vocab = tk.vocab_size();
  for (size_t i = 0; i < req.tokens.size(); ++i)
    if (req.tokens[i] >= vocab)
      return field_error(errc::invalid_argument, fmt::format("tokens[{}]", i), codes::invalid_value,
                         fmt::format("Invalid value for 'tokens[{}]': token id {} is not below the "
                                     "vocabulary size {}.", i, req.tokens[i], vocab));
  json j = json::object();
  j["prompt"] = tk.decode(req.tokens, /*include_special=*/true);
  return dump(j);
}

expected<uint32_t> count_chat_tokens(tok::chat_input chat, const tok::tokenizer& tk,
                                     const tok::chat_template& tmpl) {
  auto text = render(std::move(chat), /*generation_prompt=*/true, tmpl);
  if (!text)
    return std::move(text.error());
  return static_cast<uint32_t>(encode(std::move(*text), tk, /*add_special=*/true).size());
}

} // namespace dynamo::openai
