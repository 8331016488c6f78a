// POST /v1/responses body -> chat completions body (see responses_api.hpp).
#include "runtime/openai/responses_api.hpp"
#include "runtime/openai/responses_output.hpp"

#include "runtime/openai/json_fields.hpp"
#include "runtime/protocol/llm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace dynamo::openai {

namespace {

using ojson = nlohmann::ordered_json;
using detail::json;

/// Text of a Responses message `content`: a string, or parts of type
/// input_text / output_text (joined with "\n"); other parts are unsupported.
caf::error read_text(const json& content, const std::string& param, std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return {};
  }
  if (!content.is_array())
    return detail::type_error(param, "a string or an array of content parts", content);
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    auto p = fmt::format("{}[{}]", param, j);
    if (!part.is_object())
      return detail::type_error(p, "an object", part);
    const json* type = detail::field(part, "type");
    if (!type || !type->is_string())
      return detail::missing_error(p + ".type");
    const auto t = type->get<std::string>();
    if (t != "input_text" && t != "output_text" && t != "text")
      return detail::unsupported_error(p + ".type", fmt::format("only text parts are supported, got '{}'.", t));
    const json* text = detail::field(part, "text");
    if (!text)
      return detail::missing_error(p + ".text");
    if (!text->is_string())
      return detail::type_error(p + ".text", "a string", *text);
    if (j > 0)
      out += '\n';
    out += text->get<std::string>();
  }
  return {};
}

/// One input item appended to the chat messages. Consecutive function_call
/// items become one assistant message with several tool_calls.
caf::error add_item(const json& item, size_t i, ojson& messages) {
  auto param = fmt::format("input[{}]", i);
  if (!item.is_object())
    return detail::type_error(param, "an object", item);
  std::string type = "message";
  if (const json* t = detail::field(item, "type")) {
    if (!t->is_string())
      return detail::type_error(param + ".type", "a string", *t);
    type = t->get<std::string>();
  }
  if (type == "message") {
    std::string role, text;
    if (auto err = detail::read_required_string(item, param, "role", role))
      return err;
    if (role != "user" && role != "assistant" && role != "system" && role != "developer")
      return detail::value_error(param + ".role",
                                 fmt::format("'{}' is not one of user, assistant, system, developer.", role));
    const json* content = detail::field(item, "content");
    if (!content)
      return detail::missing_error(param + ".content");
    if (auto err = read_text(*content, param + ".content", text))
      return err;
    messages.push_back(ojson{{"role", role}, {"content", text}});
    return {};
  }
  if (type == "function_call") {
    std::string call_id, name, arguments;
    if (auto err = detail::read_required_string(item, param, "call_id", call_id))
      return err;
    if (auto err = detail::read_required_string(item, param, "name", name))
      return err;
    if (auto err = detail::read_required_string(item, param, "arguments", arguments))
      return err;
    ojson call{{"id", call_id}, {"type", "function"},
               {"function", ojson{{"name", name}, {"arguments", arguments}}}};
    if (!messages.empty() && messages.back()["role"] == "assistant" &&
        messages.back().contains("tool_calls")) {
      messages.back()["tool_calls"].push_back(std::move(call));
    } else {
      messages.push_back(
        ojson{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ojson::array({std::move(call)})}});
    }
    return {};
  }
  if (type == "function_call_output") {
    std::string call_id, output;
    if (auto err = detail::read_required_string(item, param, "call_id", call_id))
      return err;
    const json* out = detail::field(item, "output");
    if (!out)
      return detail::missing_error(param + ".output");
    if (auto err = read_text(*out, param + ".output", output))
      return err;
    messages.push_back(ojson{{"role", "tool"}, {"tool_call_id", call_id}, {"content", output}});
    return {};
  }
  if (type == "reasoning")
    return {}; // a previous turn's reasoning: not part of the chat prompt
  return detail::unsupported_error(param + ".type",
                                   fmt::format("input items of type '{}' are not supported.", type));
}

caf::error read_input(const json& obj, ojson& messages) {
  if (const json* instr = detail::field(obj, "instructions")) {
    if (!instr->is_string())
      return detail::type_error("instructions", "a string", *instr);
    messages.push_back(ojson{{"role", "system"}, {"content", instr->get<std::string>()}});
  }
  const json* input = detail::field(obj, "input");
  if (!input)
    return detail::missing_error("input");
  if (input->is_string()) {
    messages.push_back(ojson{{"role", "user"}, {"content", input->get<std::string>()}});
    return {};
  }
  if (!input->is_array())
    return detail::type_error("input", "a string or an array of input items", *input);
  if (input->empty())
    return detail::value_error("input", "must contain at least one item.");
  for (size_t i = 0; i < input->size(); ++i)
    if (auto err = add_item((*input)[i], i, messages))
      return err;
  return {};
}

/// Function tools, flattened {type, name, ...} -> chat's {type, function: {...}}.
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
    const json& t = (*tools)[i];
    auto param = fmt::format("tools[{}]", i);
    if (!t.is_object())
      return detail::type_error(param, "an object", t);
    std::string type, name;
    if (auto err = detail::read_required_string(t, param, "type", type))
      return err;
    if (type != "function")
      return detail::unsupported_error(param + ".type",
                                       fmt::format("only function tools are supported, got '{}'.", type));
    if (auto err = detail::read_required_string(t, param, "name", name))
      return err;
    ojson fn{{"name", name}};
    for (const char* key : {"description", "parameters", "strict"})
      if (const json* v = detail::field(t, key))
        fn[key] = ojson::parse(v->dump());
    out.push_back(ojson{{"type", "function"}, {"function", std::move(fn)}});
  }
  chat["tools"] = std::move(out);
  return {};
}

caf::error read_tool_choice(const json& obj, ojson& chat) {
  const json* choice = detail::field(obj, "tool_choice");
  if (!choice)
    return {};
  if (choice->is_string()) {
    auto c = choice->get<std::string>();
    if (c != "none" && c != "auto" && c != "required")
      return detail::value_error("tool_choice", fmt::format("'{}' is not one of none, auto, required.", c));
    chat["tool_choice"] = c;
    return {};
  }
  if (!choice->is_object())
    return detail::type_error("tool_choice", "a string or an object", *choice);
  std::string type, name;
  if (auto err = detail::read_required_string(*choice, "tool_choice", "type", type))
    return err;
  if (type != "function")
    return detail::unsupported_error("tool_choice.type",
                                     fmt::format("only function tool choices are supported, got '{}'.", type));
  if (auto err = detail::read_required_string(*choice, "tool_choice", "name", name))
    return err;
  chat["tool_choice"] = ojson{{"type", "function"}, {"function", ojson{{"name", name}}}};
  return {};
}

/// text.format -> response_format.
caf::error read_text_format(const json& obj, ojson& chat) {
  const json* text = detail::field(obj, "text");
  if (!text)
    return {};
  if (!text->is_object())
    return detail::type_error("text", "an object", *text);
  const json* format = detail::field(*text, "format");
  if (!format)
    return {};
  if (!format->is_object())
    return detail::type_error("text.format", "an object", *format);
  std::string type;
  if (auto err = detail::read_required_string(*format, "text.format", "type", type))
    return err;
  if (type == "text")
    return {};
  if (type == "json_object") {
    chat["response_format"] = ojson{{"type", "json_object"}};
    return {};
  }
  if (type != "json_schema")
    return detail::value_error("text.format.type",
                               fmt::format("'{}' is not one of text, json_object, json_schema.", type));
  std::string name;
  if (auto err = detail::read_required_string(*format, "text.format", "name", name))
    return err;
  const json* schema = detail::field(*format, "schema");
  if (!schema)
    return detail::missing_error("text.format.schema");
  ojson js{{"name", name}, {"schema", ojson::parse(schema->dump())}};
  for (const char* key : {"description", "strict"})
    if (const json* v = detail::field(*format, key))
      js[key] = ojson::parse(v->dump());
  chat["response_format"] = ojson{{"type", "json_schema"}, {"json_schema", std::move(js)}};
  return {};
}

/// include ("message.output_text.logprobs" turns chat's logprobs on) and
/// top_logprobs (0..20, sent with them).
caf::error read_logprobs(const json& obj, ojson& chat) {
  bool logprobs = false;
  if (const json* include = detail::field(obj, "include")) {
    if (!include->is_array())
      return detail::type_error("include", "an array of strings", *include);
    for (size_t i = 0; i < include->size(); ++i) {
      const json& v = (*include)[i];
      auto param = fmt::format("include[{}]", i);
      if (!v.is_string())
        return detail::type_error(param, "a string", v);
      if (v.get_ref<const std::string&>() != "message.output_text.logprobs")
        return detail::unsupported_error(
          param, fmt::format("'{}' is not supported; only message.output_text.logprobs is.", v.get<std::string>()));
      logprobs = true;
    }
  }
  std::optional<int64_t> top;
  if (auto err = detail::read_integer(obj, "top_logprobs", 0, protocol::max_top_logprobs, top))
    return err;
  if (logprobs) {
    chat["logprobs"] = true;
    if (top)
      chat["top_logprobs"] = *top;
  }
  return {};
}

/// reasoning.effort "none" asks the chat template not to think
/// (chat_template_kwargs.enable_thinking = false, as Qwen3's templates read
/// it); other efforts and summary are echoed only. An explicit
/// chat_template_kwargs (the vLLM extension) is passed on and wins.
caf::error read_reasoning(const json& obj, ojson& chat) {
  ojson kwargs = ojson::object();
  if (const json* r = detail::field(obj, "reasoning")) {
    if (!r->is_object())
      return detail::type_error("reasoning", "an object", *r);
    if (const json* effort = detail::field(*r, "effort")) {
      if (!effort->is_string())
        return detail::type_error("reasoning.effort", "a string", *effort);
      static constexpr std::string_view efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh"};
      const auto& e = effort->get_ref<const std::string&>();
      if (std::find(std::begin(efforts), std::end(efforts), e) == std::end(efforts))
        return detail::value_error("reasoning.effort",
                                   fmt::format("'{}' is not one of none, minimal, low, medium, high, xhigh.", e));
      if (e == "none")
        kwargs["enable_thinking"] = false;
    }
  }
  if (const json* kw = detail::field(obj, "chat_template_kwargs")) {
    if (!kw->is_object())
      return detail::type_error("chat_template_kwargs", "an object", *kw);
    for (auto& [k, v] : kw->items())
      kwargs[k] = ojson::parse(v.dump());
  }
  if (!kwargs.empty())
    chat["chat_template_kwargs"] = std::move(kwargs);
  return {};
}

/// Fields this stateless server cannot honour.
caf::error check_refused(const json& obj) {
  if (detail::field(obj, "previous_response_id"))
    return detail::unsupported_error("previous_response_id",
                                     "responses are not stored; send the whole conversation in 'input'.");
  std::optional<bool> background;
  if (auto err = detail::read_bool(obj, "background", background))
    return err;
  if (background.value_or(false))
    return detail::unsupported_error("background", "background responses are not supported.");
  if (detail::field(obj, "conversation"))
    return detail::unsupported_error("conversation", "conversations are not stored.");
  return {};
}

/// Sampling fields copied as they are (the chat parser validates them).
void copy_sampling(const json& obj, ojson& chat) {
  for (const char* key : {"temperature", "top_p", "parallel_tool_calls", "user", "seed", "top_k",
                          "min_p", "stop"})
    if (const json* v = detail::field(obj, key))
      chat[key] = ojson::parse(v->dump());
}

} // namespace

expected<dialect_request> translate_responses_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  std::string model;
  if (auto err = detail::read_model(*obj, model))
    return err;
  if (auto err = check_refused(*obj))
    return err;
  ojson chat = ojson::object();
  chat["model"] = model;
  ojson messages = ojson::array();
  if (auto err = read_input(*obj, messages))
    return err;
  chat["messages"] = std::move(messages);
  std::optional<int64_t> max_output;
  if (auto err = detail::read_integer(*obj, "max_output_tokens", 1, UINT32_MAX, max_output))
    return err;
  if (max_output)
    chat["max_completion_tokens"] = *max_output;
  copy_sampling(*obj, chat);
  if (auto err = read_tools(*obj, chat))
    return err;
  if (auto err = read_tool_choice(*obj, chat))
    return err;
  if (auto err = read_text_format(*obj, chat))
    return err;
  if (auto err = read_logprobs(*obj, chat))
    return err;
  if (auto err = read_reasoning(*obj, chat))
    return err;
  std::optional<bool> stream;
  if (auto err = detail::read_bool(*obj, "stream", stream))
    return err;
  dialect_request out;
  out.stream = stream.value_or(false);
  if (out.stream) {
    chat["stream"] = true;
    chat["stream_options"] = ojson{{"include_usage", true}}; // response.completed carries usage
  }
  out.chat_body = chat.dump(-1, ' ', false, ojson::error_handler_t::replace);
  out.dialect = make_responses_dialect(*obj);
  return out;
}

} // namespace dynamo::openai
