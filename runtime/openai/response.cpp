#include "runtime/openai/response.hpp"

#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/tokenizer/detokenizer.hpp"

#include <algorithm>
#include <random>

namespace dynamo::openai {

namespace {

using ojson = nlohmann::ordered_json;

using detail::dump;

ojson finish_json(protocol::finish_reason r, bool tool_calls = false) {
  if (tool_calls && r == protocol::finish_reason::stop)
    return "tool_calls";
  auto text = finish_reason_text(r);
  return text.empty() ? ojson(nullptr) : ojson(text);
}

ojson usage_json(const usage_counts& u) {
  return ojson{{"prompt_tokens", u.prompt_tokens},
               {"completion_tokens", u.completion_tokens},
               {"total_tokens", u.prompt_tokens + u.completion_tokens},
               {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

ojson envelope(const response_meta& meta, std::string_view object) {
  return ojson{{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

/// A logprob as JSON: -inf (a masked token) has no JSON form; -9999 as vLLM.
double logprob_value(float lp) { return std::max(static_cast<double>(lp), -9999.0); }

ojson byte_list(std::string_view bytes) {
  auto a = ojson::array();
  for (char c : bytes)
    a.push_back(static_cast<unsigned>(static_cast<unsigned char>(c)));
  return a;
}

ojson chat_logprobs_json(const std::vector<logprob_entry>* entries) {
  if (entries == nullptr)
    return nullptr;
  auto content = ojson::array();
  for (const logprob_entry& e : *entries) {
    auto top = ojson::array();
    for (const logprob_alt& a : e.top)
      top.push_back(ojson{{"token", token_text(a.bytes)},
                          {"logprob", logprob_value(a.logprob)},
                          {"bytes", byte_list(a.bytes)}});
    content.push_back(ojson{{"token", token_text(e.bytes)},
                            {"logprob", logprob_value(e.logprob)},
                            {"bytes", byte_list(e.bytes)},
                            {"top_logprobs", std::move(top)}});
  }
  return ojson{{"content", std::move(content)}, {"refusal", nullptr}};
}

ojson completion_logprobs_json(const std::vector<logprob_entry>* entries) {
  if (entries == nullptr)
    return nullptr;
  auto tokens = ojson::array(), values = ojson::array(), tops = ojson::array(),
       offsets = ojson::array();
  for (const logprob_entry& e : *entries) {
    const std::string text = token_text(e.bytes);
    tokens.push_back(text);
    offsets.push_back(e.text_offset);
    if (e.no_logprob) { // an echoed prompt's first token
      values.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    values.push_back(logprob_value(e.logprob));
    auto top = ojson::object(); // the alternatives and the chosen token (OpenAI: up to logprobs + 1)
    for (const logprob_alt& a : e.top)
      top.emplace(token_text(a.bytes), logprob_value(a.logprob));
    top.emplace(text, logprob_value(e.logprob)); // no-op when already there
    tops.push_back(std::move(top));
  }
  return ojson{{"tokens", std::move(tokens)},
               {"token_logprobs", std::move(values)},
               {"top_logprobs", std::move(tops)},
               {"text_offset", std::move(offsets)}};
}

const std::vector<logprob_entry>* logprobs_of(const choice_result& c) {
  return c.logprobs ? &*c.logprobs : nullptr;
}

std::string chat_chunk(const response_meta& meta, uint32_t index, ojson delta, ojson logprobs,
                       protocol::finish_reason finish, bool usage_null) {
  auto j = envelope(meta, "chat.completion.chunk");
  j["choices"] = ojson::array({ojson{{"index", index},
                                     {"delta", std::move(delta)},
                                     {"logprobs", std::move(logprobs)},
                                     {"finish_reason", finish_json(finish)}}});
  if (usage_null)
    j["usage"] = nullptr;
  return dump(j);
}

} // namespace

std::string_view finish_reason_text(protocol::finish_reason r) noexcept {
  switch (r) {
    case protocol::finish_reason::none: return "";
    case protocol::finish_reason::stop: return "stop";
    case protocol::finish_reason::length: return "length";
    case protocol::finish_reason::cancelled: return "cancelled";
    case protocol::finish_reason::error: return "error";
  }
  return "";
}

std::string random_hex_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}{:016x}", rng(), rng());
}

std::string token_text(std::string_view bytes) {
  std::string copy{bytes};
  if (tok::utf8_complete_prefix(copy) == bytes.size() && copy == bytes)
    return copy;
  std::string out = "bytes:";
  for (char c : bytes)
    out += fmt::format("\\x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
  return out;
}

std::string chat_completion_body(const response_meta& meta, std::span<const choice_result> choices,
                                 const usage_counts& usage) {
  auto j = envelope(meta, "chat.completion");
  auto list = ojson::array();
  for (const choice_result& c : choices) {
    ojson message{{"role", "assistant"},
                  {"content", c.text.empty() && c.null_empty_content ? ojson(nullptr) : ojson(c.text)},
                  {"refusal", nullptr}};
    if (!c.reasoning.empty())
      message["reasoning_content"] = c.reasoning;
    if (!c.tool_calls.empty()) {
      auto calls = ojson::array();
      for (const tool_call& t : c.tool_calls)
        calls.push_back(ojson{{"id", t.id},
                              {"type", "function"},
                              {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
      message["tool_calls"] = std::move(calls);
    }
    list.push_back(ojson{{"index", c.index},
                         {"message", std::move(message)},
                         {"logprobs", chat_logprobs_json(logprobs_of(c))},
                         {"finish_reason", finish_json(c.finish, !c.tool_calls.empty())}});
  }
  j["choices"] = std::move(list);
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string chat_role_chunk(const response_meta& meta, uint32_t index, bool usage_null) {
  return chat_chunk(meta, index, ojson{{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}},
                    nullptr, protocol::finish_reason::none, usage_null);
}

std::string chat_content_chunk(const response_meta& meta, uint32_t index, std::string_view text,
                               const std::vector<logprob_entry>* logprobs, bool usage_null) {
  return chat_chunk(meta, index, ojson{{"content", text}}, chat_logprobs_json(logprobs),
                    protocol::finish_reason::none, usage_null);
}

std::vector<std::string> chat_delta_chunks(const response_meta& meta, uint32_t index,
                                           const output_delta& d,
                                           const std::vector<logprob_entry>* logprobs,
                                           bool usage_null) {
  std::vector<std::string> out;
  auto add = [&](ojson delta) {
    ojson lp = out.empty() ? chat_logprobs_json(logprobs) : ojson(nullptr);
    out.push_back(chat_chunk(meta, index, std::move(delta), std::move(lp),
                             protocol::finish_reason::none, usage_null));
  };
  if (!d.reasoning.empty())
    add(ojson{{"reasoning_content", d.reasoning}});
  if (!d.content.empty())
    add(ojson{{"content", d.content}});
  for (const tool_call_delta& c : d.calls) {
    ojson call{{"index", c.index}};
    ojson fn = ojson::object();
    if (c.id) {
      call["id"] = *c.id;
      call["type"] = "function";
    }
    if (c.name)
      fn["name"] = *c.name;
    fn["arguments"] = c.arguments;
    call["function"] = std::move(fn);
    add(ojson{{"tool_calls", ojson::array({std::move(call)})}});
  }
  if (out.empty() && logprobs != nullptr && !logprobs->empty())
    add(ojson{{"content", ""}});
  return out;
}

std::string chat_finish_chunk(const response_meta& meta, uint32_t index,
                              protocol::finish_reason finish, bool usage_null, bool tool_calls) {
  auto j = envelope(meta, "chat.completion.chunk");
  j["choices"] = ojson::array({ojson{{"index", index},
                                     {"delta", ojson::object()},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish_json(finish, tool_calls)}}});
  if (usage_null)
    j["usage"] = nullptr;
  return dump(j);
}

std::string chat_usage_chunk(const response_meta& meta, const usage_counts& usage) {
  auto j = envelope(meta, "chat.completion.chunk");
  j["choices"] = ojson::array();
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string completion_body(const response_meta& meta, std::span<const choice_result> choices,
                            const usage_counts& usage) {
  auto j = envelope(meta, "text_completion");
  auto list = ojson::array();
  for (const choice_result& c : choices)
    list.push_back(ojson{{"index", c.index},
                         {"text", c.text},
                         {"logprobs", completion_logprobs_json(logprobs_of(c))},
                         {"finish_reason", finish_json(c.finish)}});
  j["choices"] = std::move(list);
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string completion_chunk(const response_meta& meta, uint32_t index, std::string_view text,
                             const std::vector<logprob_entry>* logprobs,
                             protocol::finish_reason finish, bool usage_null) {
  auto j = envelope(meta, "text_completion");
  j["choices"] = ojson::array({ojson{{"index", index},
                                     {"text", text},
                                     {"logprobs", completion_logprobs_json(logprobs)},
                                     {"finish_reason", finish_json(finish)}}});
  if (usage_null)
    j["usage"] = nullptr;
  return dump(j);
}

std::string completion_usage_chunk(const response_meta& meta, const usage_counts& usage) {
  auto j = envelope(meta, "text_completion");
  j["choices"] = ojson::array();
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string model_body(const model_info& m) {
  return dump(ojson{{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", m.owned_by}});
}

std::string model_list_body(std::span<const model_info> models) {
  auto data = ojson::array();
  for (const auto& m : models)
    data.push_back(
      ojson{{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", m.owned_by}});
  return dump(ojson{{"object", "list"}, {"data", std::move(data)}});
}

} // namespace dynamo::openai
