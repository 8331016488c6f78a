// POST /v1/chat/completions body -> chat_request.
#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace dynamo::openai {

namespace {

using detail::json;

// Text of `content`: a string, or an array of {"type":"text","text":...} parts
// joined with "\n". Other part types (images, audio, files) are unsupported.
caf::error read_content(const json& content, const std::string& param, std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return {};
  }
  if (!content.is_array())
    return detail::type_error(param, "a string or an array of content parts", content);
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    auto part_param = fmt::format("{}[{}]", param, j);
    if (!part.is_object())
      return detail::type_error(part_param, "an object", part);
    const json* type = detail::field(part, "type");
    if (!type)
      return detail::missing_error(part_param + ".type");
    if (!type->is_string())
      return detail::type_error(part_param + ".type", "a string", *type);
    if (type->get<std::string>() != "text")
      return detail::unsupported_error(part_param + ".type",
                                       fmt::format("only 'text' content parts are supported, got "
                                                   "'{}'.", type->get<std::string>()));
    const json* text = detail::field(part, "text");
    if (!text)
      return detail::missing_error(part_param + ".text");
    if (!text->is_string())
      return detail::type_error(part_param + ".text", "a string", *text);
    if (j > 0)
      out += '\n';
    out += text->get<std::string>();
  }
  return {};
}

caf::error read_message(const json& m, size_t i, tok::chat_message& out) {
  auto param = fmt::format("messages[{}]", i);
  if (!m.is_object())
    return detail::type_error(param, "an object", m);
  const json* role = detail::field(m, "role");
  if (!role)
    return detail::missing_error(param + ".role");
  if (!role->is_string())
    return detail::type_error(param + ".role", "a string", *role);
  out.role = role->get<std::string>();
  auto roles = chat_roles();
  if (std::find(roles.begin(), roles.end(), out.role) == roles.end())
    return detail::value_error(param + ".role",
                               fmt::format("'{}' is not one of system, developer, user, assistant, "
                                           "tool.", out.role));
  if (const json* calls = detail::field(m, "tool_calls"); calls && !calls->empty())
    return detail::unsupported_error(param + ".tool_calls", "tool calls are not supported.");
  const json* content = detail::field(m, "content");
  if (!content) {
    // Only an assistant turn may omit its content (OpenAI allows it with tool calls).
    if (out.role == "assistant")
      return {};
    return detail::missing_error(param + ".content");
  }
  return read_content(*content, param + ".content", out.content);
}

caf::error read_messages(const json& obj, std::vector<tok::chat_message>& out) {
  const json* msgs = detail::field(obj, "messages");
  if (!msgs)
    return detail::missing_error("messages");
  if (!msgs->is_array())
    return detail::type_error("messages", "an array", *msgs);
  if (msgs->empty())
    return detail::value_error("messages", "must contain at least one message.");
  out.resize(msgs->size());
  for (size_t i = 0; i < msgs->size(); ++i)
    if (auto err = read_message((*msgs)[i], i, out[i]))
      return err;
  return {};
}

// logprobs (bool) and top_logprobs (0..20, only with logprobs=true).
caf::error read_logprobs(const json& obj, std::optional<uint32_t>& out) {
  std::optional<bool> logprobs;
  std::optional<int64_t> top;
  if (auto err = detail::read_bool(obj, "logprobs", logprobs))
    return err;
  if (auto err = detail::read_integer(obj, "top_logprobs", 0, protocol::max_top_logprobs, top))
    return err;
  if (top && !logprobs.value_or(false))
    return detail::value_error("top_logprobs", "requires 'logprobs' to be true.");
  if (logprobs.value_or(false))
    out = static_cast<uint32_t>(top.value_or(0));
  return {};
}

caf::error check_unimplemented_chat(const json& obj) {
  if (auto err = detail::check_empty(obj, "tools", json::value_t::array))
    return err;
  if (const json* choice = detail::field(obj, "tool_choice")) {
    bool neutral = choice->is_string() && (*choice == "none" || *choice == "auto");
    if (!neutral)
      return detail::unsupported_error("tool_choice", "only 'none' and 'auto' (without tools) "
                                                      "are supported.");
  }
  std::optional<bool> parallel;
  if (auto err = detail::read_bool(obj, "parallel_tool_calls", parallel))
    return err;
  return {};
}

} // namespace

expected<chat_request> parse_chat_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  chat_request out;
  if (auto err = detail::read_model(*obj, out.model))
    return err;
  if (auto err = read_messages(*obj, out.messages))
    return err;
  if (auto err = detail::read_common(*obj, out.params))
    return err;
  std::optional<int64_t> max_completion;
  if (auto err = detail::read_integer(*obj, "max_completion_tokens", 1,
                                      std::numeric_limits<uint32_t>::max(), max_completion))
    return err;
  if (max_completion)
    out.params.max_tokens = static_cast<uint32_t>(*max_completion);
  if (auto err = detail::check_min_tokens(out.params))
    return err;
  if (auto err = read_logprobs(*obj, out.params.logprobs))
    return err;
  if (auto err = check_unimplemented_chat(*obj))
    return err;
  return out;
}

} // namespace dynamo::openai
