// POST /v1/chat/completions body -> chat_request.
#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
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

using ojson = nlohmann::ordered_json;

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64)
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

caf::error read_string_field(const json& obj, const std::string& param, const char* name,
                             bool required, std::string* out = nullptr) {
  const json* f = detail::field(obj, name);
  if (!f)
    return required ? detail::missing_error(param + "." + name) : caf::error{};
  if (!f->is_string())
    return detail::type_error(param + "." + name, "a string", *f);
  if (out)
    *out = f->get<std::string>();
  return {};
}

// An assistant turn's tool_calls: [{id, type: "function", function: {name, arguments}}].
caf::error check_tool_calls(const json& calls, const std::string& param) {
  if (!calls.is_array())
    return detail::type_error(param, "an array", calls);
  for (size_t k = 0; k < calls.size(); ++k) {
    const json& c = calls[k];
    auto cp = fmt::format("{}[{}]", param, k);
    if (!c.is_object())
      return detail::type_error(cp, "an object", c);
    if (auto err = read_string_field(c, cp, "id", false))
      return err;
    std::string type = "function";
    if (auto err = read_string_field(c, cp, "type", false, &type))
      return err;
    if (type != "function")
      return detail::value_error(cp + ".type", fmt::format("expected 'function', got '{}'.", type));
    const json* fn = detail::field(c, "function");
    if (!fn)
      return detail::missing_error(cp + ".function");
    if (!fn->is_object())
      return detail::type_error(cp + ".function", "an object", *fn);
    if (auto err = read_string_field(*fn, cp + ".function", "name", true))
      return err;
    const json* args = detail::field(*fn, "arguments");
    if (args && !args->is_string() && !args->is_object())
      return detail::type_error(cp + ".function.arguments", "a string", *args);
  }
  return {};
}

caf::error check_message(const json& m, size_t i) {
  auto param = fmt::format("messages[{}]", i);
  if (!m.is_object())
    return detail::type_error(param, "an object", m);
  std::string role;
  if (auto err = read_string_field(m, param, "role", true, &role))
    return err;
  auto roles = chat_roles();
  if (std::find(roles.begin(), roles.end(), role) == roles.end())
    return detail::value_error(param + ".role",
                               fmt::format("'{}' is not one of system, developer, user, assistant, "
                                           "tool.", role));
  if (const json* calls = detail::field(m, "tool_calls")) {
    if (role != "assistant" && !(calls->is_array() && calls->empty()))
      return detail::value_error(param + ".tool_calls", "only assistant messages have tool calls.");
    if (auto err = check_tool_calls(*calls, param + ".tool_calls"))
      return err;
  }
  if (role == "tool")
    if (auto err = read_string_field(m, param, "tool_call_id", true))
      return err;
  if (auto err = read_string_field(m, param, "name", false))
    return err;
  if (auto err = read_string_field(m, param, "reasoning_content", false))
    return err;
  const json* content = detail::field(m, "content");
  if (!content) {
    // Only an assistant turn may omit its content (OpenAI allows it with tool calls).
    if (role == "assistant")
      return {};
    return detail::missing_error(param + ".content");
  }
  std::string text;
  return read_content(*content, param + ".content", text);
}

// The message as the template sees it (key order kept): content a string,
// tool call arguments an object when their JSON text is one. REQUIRES: checked.
ojson template_message(const ojson& m) {
  ojson out = m;
  std::string text;
  if (auto c = m.find("content"); c != m.end() && !c->is_null())
    (void)read_content(json(*c), "", text);
  out["content"] = std::move(text);
  if (auto calls = out.find("tool_calls"); calls != out.end()) {
    if (calls->is_null() || calls->empty()) {
      out.erase(calls);
      return out;
    }
    for (auto& c : *calls) {
      auto& fn = c["function"];
      auto args = fn.find("arguments");
      if (args == fn.end() || args->is_null()) {
        fn["arguments"] = ojson::object();
      } else if (args->is_string()) {
        auto parsed = ojson::parse(args->get<std::string>(), nullptr, false);
        if (!parsed.is_discarded() && parsed.is_object())
          *args = std::move(parsed);
      }
    }
  }
  return out;
}

caf::error read_messages(const json& obj, const ojson& ordered, ojson& out) {
  const json* msgs = detail::field(obj, "messages");
  if (!msgs)
    return detail::missing_error("messages");
  if (!msgs->is_array())
    return detail::type_error("messages", "an array", *msgs);
  if (msgs->empty())
    return detail::value_error("messages", "must contain at least one message.");
  for (size_t i = 0; i < msgs->size(); ++i)
    if (auto err = check_message((*msgs)[i], i))
      return err;
  out = ojson::array();
  for (const ojson& m : ordered.at("messages"))
    out.push_back(template_message(m));
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

// JSON Schema "type" values must name JSON Schema types, wherever a schema
// can nest (properties, items, combinators, definitions).
caf::error check_schema(const json& s, const std::string& param, size_t depth = 0) {
  static constexpr std::array<std::string_view, 7> types = {"object", "array",   "string", "number",
                                                            "integer", "boolean", "null"};
  if (!s.is_object())
    return s.is_boolean() ? caf::error{} : detail::type_error(param, "an object", s);
  if (depth > max_json_depth)
    return detail::value_error(param, "the schema nests too deep.");
  if (auto t = s.find("type"); t != s.end()) {
    auto ok = [&](const json& v) {
      return v.is_string() && std::find(types.begin(), types.end(), v.get<std::string>()) != types.end();
    };
    bool valid = t->is_array() ? !t->empty() && std::all_of(t->begin(), t->end(), ok) : ok(*t);
    if (!valid)
      return detail::value_error(param + ".type",
                                 fmt::format("{} is not a JSON Schema type (object, array, string, "
                                             "number, integer, boolean, null).", t->dump()));
  }
  for (const char* key : {"properties", "$defs", "definitions", "patternProperties"})
    if (auto p = s.find(key); p != s.end()) {
      if (!p->is_object())
        return detail::type_error(param + "." + key, "an object", *p);
      for (auto it = p->begin(); it != p->end(); ++it)
        if (auto err = check_schema(it.value(), param + "." + key + "." + it.key(), depth + 1))
          return err;
    }
  for (const char* key : {"items", "additionalProperties", "not"})
    if (auto p = s.find(key); p != s.end() && !p->is_array())
      if (auto err = check_schema(*p, param + "." + key, depth + 1))
        return err;
  for (const char* key : {"anyOf", "oneOf", "allOf", "prefixItems"})
    if (auto p = s.find(key); p != s.end()) {
      if (!p->is_array())
        return detail::type_error(param + "." + key, "an array", *p);
      for (size_t k = 0; k < p->size(); ++k)
        if (auto err = check_schema((*p)[k], fmt::format("{}.{}[{}]", param, key, k), depth + 1))
          return err;
    }
  return {};
}

caf::error check_tool(const json& t, size_t i, std::vector<std::string>& names) {
  auto param = fmt::format("tools[{}]", i);
  if (!t.is_object())
    return detail::type_error(param, "an object", t);
  std::string type;
  if (auto err = read_string_field(t, param, "type", true, &type))
    return err;
  if (type != "function")
    return detail::value_error(param + ".type", fmt::format("expected 'function', got '{}'.", type));
  const json* fn = detail::field(t, "function");
  if (!fn)
    return detail::missing_error(param + ".function");
  if (!fn->is_object())
    return detail::type_error(param + ".function", "an object", *fn);
  const std::string fp = param + ".function";
  std::string name;
  if (auto err = read_string_field(*fn, fp, "name", true, &name))
    return err;
  if (!valid_function_name(name))
    return detail::value_error(fp + ".name", fmt::format("'{}' must be 1 to 64 characters from "
                                                         "a-z, A-Z, 0-9, _ and -.", name));
  if (std::find(names.begin(), names.end(), name) != names.end())
    return detail::value_error(fp + ".name", fmt::format("the function '{}' is defined twice.", name));
  names.push_back(name);
  if (auto err = read_string_field(*fn, fp, "description", false))
    return err;
  std::optional<bool> strict;
  if (auto err = detail::read_bool(*fn, "strict", strict))
    return detail::type_error(fp + ".strict", "a boolean", fn->at("strict"));
  if (const json* params = detail::field(*fn, "parameters")) {
    if (!params->is_object())
      return detail::type_error(fp + ".parameters", "an object", *params);
    if (auto err = check_schema(*params, fp + ".parameters"))
      return err;
  }
  return {};
}

// tools, tool_choice, parallel_tool_calls.
caf::error read_tools(const json& obj, const ojson& ordered, chat_request& out) {
  std::vector<std::string> names;
  if (const json* tools = detail::field(obj, "tools")) {
    if (!tools->is_array())
      return detail::type_error("tools", "an array", *tools);
    for (size_t i = 0; i < tools->size(); ++i)
      if (auto err = check_tool((*tools)[i], i, names))
        return err;
    if (!tools->empty())
      out.chat.tools = ordered.at("tools");
  }
  out.tool_choice = names.empty() ? tool_choice_mode::none : tool_choice_mode::automatic;
  if (const json* choice = detail::field(obj, "tool_choice")) {
    if (choice->is_string()) {
      const auto c = choice->get<std::string>();
      if (c == "none")
        out.tool_choice = tool_choice_mode::none;
      else if (c == "auto")
        out.tool_choice = names.empty() ? tool_choice_mode::none : tool_choice_mode::automatic;
      else if (c == "required")
        out.tool_choice = tool_choice_mode::required;
      else
        return detail::value_error("tool_choice", fmt::format("'{}' is not one of none, auto, "
                                                              "required.", c));
    } else if (choice->is_object()) {
      std::string type;
      if (auto err = read_string_field(*choice, "tool_choice", "type", true, &type))
        return err;
      if (type != "function")
        return detail::value_error("tool_choice.type",
                                   fmt::format("expected 'function', got '{}'.", type));
      const json* fn = detail::field(*choice, "function");
      if (!fn)
        return detail::missing_error("tool_choice.function");
      if (!fn->is_object())
        return detail::type_error("tool_choice.function", "an object", *fn);
      if (auto err = read_string_field(*fn, "tool_choice.function", "name", true, &out.tool_name))
        return err;
      if (std::find(names.begin(), names.end(), out.tool_name) == names.end())
        return detail::value_error("tool_choice.function.name",
                                   fmt::format("no function named '{}' is in 'tools'.", out.tool_name));
      out.tool_choice = tool_choice_mode::named;
    } else {
      return detail::type_error("tool_choice", "a string or an object", *choice);
    }
    if (out.tool_choice == tool_choice_mode::required && names.empty())
      return detail::value_error("tool_choice", "'required' needs at least one tool in 'tools'.");
  }
  std::optional<bool> parallel;
  if (auto err = detail::read_bool(obj, "parallel_tool_calls", parallel))
    return err;
  out.parallel_tool_calls = parallel.value_or(true);
  return {};
}

caf::error read_template_kwargs(const json& obj, const ojson& ordered, ojson& out) {
  const json* kw = detail::field(obj, "chat_template_kwargs");
  if (!kw)
    return {};
  if (!kw->is_object())
    return detail::type_error("chat_template_kwargs", "an object", *kw);
  for (const char* reserved : {"messages", "tools", "add_generation_prompt", "documents"})
    if (kw->contains(reserved))
      return detail::value_error("chat_template_kwargs",
                                 fmt::format("'{}' is set by the request itself.", reserved));
  out = ordered.at("chat_template_kwargs");
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
  // The template sees messages, tools and kwargs with their keys in the order
  // the client sent them (tojson prints them so); the body is valid JSON here.
  const ojson ordered = ojson::parse(body.begin(), body.end(), nullptr, false);
  if (auto err = read_messages(*obj, ordered, out.chat.messages))
    return err;
  if (auto err = read_tools(*obj, ordered, out))
    return err;
  if (auto err = read_template_kwargs(*obj, ordered, out.chat.kwargs))
    return err;
  if (auto err = detail::read_common(*obj, out.params))
    return err;
  if ((out.tool_choice == tool_choice_mode::required || out.tool_choice == tool_choice_mode::named) &&
      out.params.guided.kind != protocol::guided_kind::none)
    return detail::value_error("response_format", "a response format or guided_* constraint cannot be "
                                                  "combined with a tool_choice that forces a call.");
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
  return out;
}

} // namespace dynamo::openai
