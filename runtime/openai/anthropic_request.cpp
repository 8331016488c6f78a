// POST /v1/messages body -> chat completions body (see anthropic_api.hpp).
#include "runtime/openai/anthropic_api.hpp"
#include "runtime/openai/anthropic_output.hpp"

#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

namespace dynamo::openai {

namespace {

using ojson = nlohmann::ordered_json;
using detail::json;

ojson to_ordered(const json& j) { return ojson::parse(j.dump()); }

/// Text of a string or of text blocks (joined with "\n"); `param` names it.
caf::error read_text(const json& content, const std::string& param, std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return {};
  }
  if (!content.is_array())
    return detail::type_error(param, "a string or an array of content blocks", content);
  for (size_t j = 0; j < content.size(); ++j) {
    auto p = fmt::format("{}[{}]", param, j);
    const json& b = content[j];
    if (!b.is_object())
      return detail::type_error(p, "an object", b);
    std::string type, text;
    if (auto err = detail::read_required_string(b, p, "type", type))
      return err;
    if (type != "text")
      return detail::unsupported_error(p + ".type", fmt::format("only text blocks are supported here, got '{}'.", type));
    if (auto err = detail::read_required_string(b, p, "text", text))
      return err;
    if (!out.empty())
      out += '\n';
    out += text;
  }
  return {};
}

/// One Anthropic message -> chat messages: tool_result blocks become `tool`
/// messages (first, as the tool answers the previous turn's calls), tool_use
/// blocks the assistant's tool_calls, text blocks the content.
caf::error add_message(const json& m, size_t i, ojson& messages) {
  auto param = fmt::format("messages[{}]", i);
  if (!m.is_object())
    return detail::type_error(param, "an object", m);
  std::string role;
  if (auto err = detail::read_required_string(m, param, "role", role))
    return err;
  if (role != "user" && role != "assistant")
    return detail::value_error(param + ".role", fmt::format("'{}' is not one of user, assistant.", role));
  const json* content = detail::field(m, "content");
  if (!content)
    return detail::missing_error(param + ".content");
  if (content->is_string()) {
    messages.push_back(ojson{{"role", role}, {"content", content->get<std::string>()}});
    return {};
  }
  if (!content->is_array())
    return detail::type_error(param + ".content", "a string or an array of content blocks", *content);
  std::string text;
  ojson calls = ojson::array();
  for (size_t j = 0; j < content->size(); ++j) {
    auto p = fmt::format("{}.content[{}]", param, j);
    const json& b = (*content)[j];
    if (!b.is_object())
      return detail::type_error(p, "an object", b);
    std::string type;
    if (auto err = detail::read_required_string(b, p, "type", type))
      return err;
    if (type == "text") {
      std::string t;
      if (auto err = detail::read_required_string(b, p, "text", t))
        return err;
      if (!text.empty())
        text += '\n';
      text += t;
    } else if (type == "tool_use" && role == "assistant") {
      std::string id, name;
      if (auto err = detail::read_required_string(b, p, "id", id))
        return err;
      if (auto err = detail::read_required_string(b, p, "name", name))
        return err;
      const json* input = detail::field(b, "input");
      if (input && !input->is_object())
        return detail::type_error(p + ".input", "an object", *input);
      std::string args = input ? input->dump() : "{}";
      calls.push_back(ojson{{"id", id}, {"type", "function"}, {"function", ojson{{"name", name}, {"arguments", args}}}});
    } else if (type == "tool_result" && role == "user") {
      std::string id, result;
      if (auto err = detail::read_required_string(b, p, "tool_use_id", id))
        return err;
      if (const json* c = detail::field(b, "content"))
        if (auto err = read_text(*c, p + ".content", result))
          return err;
      messages.push_back(ojson{{"role", "tool"}, {"tool_call_id", id}, {"content", result}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      continue; // earlier reasoning is not part of the prompt
    } else {
      return detail::unsupported_error(p + ".type",
                                       fmt::format("content blocks of type '{}' are not supported in {} messages.", type, role));
    }
  }
  if (!calls.empty()) {
    messages.push_back(ojson{{"role", "assistant"}, {"content", text.empty() ? ojson(nullptr) : ojson(text)},
                             {"tool_calls", std::move(calls)}});
  } else if (!text.empty() || content->empty()) {
    messages.push_back(ojson{{"role", role}, {"content", text}});
  }
  return {};
}

caf::error read_messages(const json& obj, ojson& messages) {
  if (const json* system = detail::field(obj, "system")) {
    std::string text;
    if (auto err = read_text(*system, "system", text))
      return err;
    messages.push_back(ojson{{"role", "system"}, {"content", text}});
  }
  const json* msgs = detail::field(obj, "messages");
  if (!msgs)
    return detail::missing_error("messages");
  if (!msgs->is_array())
    return detail::type_error("messages", "an array", *msgs);
  if (msgs->empty())
    return detail::value_error("messages", "must contain at least one message.");
  for (size_t i = 0; i < msgs->size(); ++i)
    if (auto err = add_message((*msgs)[i], i, messages))
      return err;
  return {};
}

caf::error read_tools(const json& obj, ojson& chat) {
  const json* tools = detail::field(obj, "tools");
  if (!tools)
    return {};
  if (!tools->is_array())
    return detail::type_error("tools", "an array", *tools);
  if (tools->empty())
    return {};
  ojson out = ojson::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    auto p = fmt::format("tools[{}]", i);
    const json& t = (*tools)[i];
    if (!t.is_object())
      return detail::type_error(p, "an object", t);
    if (const json* type = detail::field(t, "type"); type && *type != "custom")
      return detail::unsupported_error(p + ".type", "only client tools (with input_schema) are supported.");
    std::string name;
    if (auto err = detail::read_required_string(t, p, "name", name))
      return err;
    const json* schema = detail::field(t, "input_schema");
    if (!schema)
      return detail::missing_error(p + ".input_schema");
    if (!schema->is_object())
      return detail::type_error(p + ".input_schema", "an object", *schema);
    ojson fn{{"name", name}};
    if (const json* d = detail::field(t, "description"))
      fn["description"] = to_ordered(*d);
    fn["parameters"] = to_ordered(*schema);
    out.push_back(ojson{{"type", "function"}, {"function", std::move(fn)}});
  }
  chat["tools"] = std::move(out);
  return {};
}

caf::error read_tool_choice(const json& obj, ojson& chat) {
  const json* choice = detail::field(obj, "tool_choice");
  if (!choice)
    return {};
  if (!choice->is_object())
    return detail::type_error("tool_choice", "an object", *choice);
  std::string type;
  if (auto err = detail::read_required_string(*choice, "tool_choice", "type", type))
    return err;
  if (type == "auto" || type == "none") {
    chat["tool_choice"] = type;
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "tool") {
    std::string name;
    if (auto err = detail::read_required_string(*choice, "tool_choice", "name", name))
      return err;
    chat["tool_choice"] = ojson{{"type", "function"}, {"function", ojson{{"name", name}}}};
  } else {
    return detail::value_error("tool_choice.type", fmt::format("'{}' is not one of auto, any, tool, none.", type));
  }
  std::optional<bool> no_parallel;
  if (auto err = detail::read_bool(*choice, "disable_parallel_tool_use", no_parallel))
    return err;
  if (no_parallel.value_or(false))
    chat["parallel_tool_calls"] = false;
  return {};
}

/// The chat body's prompt part: model, messages (system first), tools.
expected<ojson> prompt_part(const json& obj) {
  std::string model;
  if (auto err = detail::read_model(obj, model))
    return err;
  ojson chat = ojson::object();
  chat["model"] = model;
  ojson messages = ojson::array();
  if (auto err = read_messages(obj, messages))
    return err;
  chat["messages"] = std::move(messages);
  if (auto err = read_tools(obj, chat))
    return err;
  return chat;
}

using detail::dump;

} // namespace

expected<dialect_request> translate_anthropic_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  auto chat = prompt_part(*obj);
  if (!chat)
    return std::move(chat.error());
  std::optional<int64_t> max_tokens;
  if (auto err = detail::read_integer(*obj, "max_tokens", 1, UINT32_MAX, max_tokens))
    return err;
  if (!max_tokens)
    return detail::missing_error("max_tokens");
  (*chat)["max_tokens"] = *max_tokens;
  if (auto err = read_tool_choice(*obj, *chat))
    return err;
  if (const json* stops = detail::field(*obj, "stop_sequences")) {
    if (!stops->is_array())
      return detail::type_error("stop_sequences", "an array of strings", *stops);
    (*chat)["stop"] = to_ordered(*stops);
  }
  for (const char* key : {"temperature", "top_p", "top_k"})
    if (const json* v = detail::field(*obj, key))
      (*chat)[key] = to_ordered(*v);
  std::optional<bool> stream;
  if (auto err = detail::read_bool(*obj, "stream", stream))
    return err;
  dialect_request out;
  out.stream = stream.value_or(false);
  if (out.stream) {
    (*chat)["stream"] = true;
    (*chat)["stream_options"] = ojson{{"include_usage", true}}; // message_delta carries usage
  }
  out.chat_body = dump(*chat);
  out.dialect = make_anthropic_dialect();
  return out;
}

expected<std::string> translate_anthropic_count_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  auto chat = prompt_part(*obj);
  if (!chat)
    return std::move(chat.error());
  return dump(*chat);
}

std::string anthropic_count_body(uint32_t input_tokens) {
  return dump(ojson{{"input_tokens", input_tokens}});
}

std::string anthropic_error_body(const api_error& e) {
  std::string_view type = "api_error";
  switch (e.status) {
    case 400: case 413: case 415: case 422: type = "invalid_request_error"; break;
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 429: type = "rate_limit_error"; break;
    case 503: case 529: type = "overloaded_error"; break;
    case 504: type = "timeout_error"; break;
    default: break;
  }
  return dump(ojson{{"type", "error"}, {"error", ojson{{"type", type}, {"message", e.message}}},
                    {"request_id", nullptr}});
}

} // namespace dynamo::openai
