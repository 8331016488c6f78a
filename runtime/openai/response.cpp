#include "runtime/openai/response.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <random>

namespace dynamo::openai {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) {
  // Replace (never throw on) invalid UTF-8; our text is valid, but be safe.
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

ojson finish_json(protocol::finish_reason r) {
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

std::string chat_chunk(const response_meta& meta, ojson delta, protocol::finish_reason finish,
                       bool usage_null) {
  auto j = envelope(meta, "chat.completion.chunk");
  j["choices"] = ojson::array({ojson{{"index", 0},
                                     {"delta", std::move(delta)},
                                     {"logprobs", nullptr},
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

std::string chat_completion_body(const response_meta& meta, std::string_view content,
                                 protocol::finish_reason finish, const usage_counts& usage) {
  auto j = envelope(meta, "chat.completion");
  j["choices"] = ojson::array({ojson{{"index", 0},
                                     {"message", {{"role", "assistant"}, {"content", content}}},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish_json(finish)}}});
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string chat_role_chunk(const response_meta& meta, bool usage_null) {
  return chat_chunk(meta, ojson{{"role", "assistant"}, {"content", ""}},
                    protocol::finish_reason::none, usage_null);
}

std::string chat_content_chunk(const response_meta& meta, std::string_view text, bool usage_null) {
  return chat_chunk(meta, ojson{{"content", text}}, protocol::finish_reason::none, usage_null);
}

std::string chat_finish_chunk(const response_meta& meta, protocol::finish_reason finish,
                              bool usage_null) {
  return chat_chunk(meta, ojson::object(), finish, usage_null);
}

std::string chat_usage_chunk(const response_meta& meta, const usage_counts& usage) {
  auto j = envelope(meta, "chat.completion.chunk");
  j["choices"] = ojson::array();
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string completion_body(const response_meta& meta, std::string_view text,
                            protocol::finish_reason finish, const usage_counts& usage) {
  auto j = envelope(meta, "text_completion");
  j["choices"] = ojson::array({ojson{{"index", 0},
                                     {"text", text},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish_json(finish)}}});
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string completion_chunk(const response_meta& meta, std::string_view text,
                             protocol::finish_reason finish, bool usage_null) {
  auto j = envelope(meta, "text_completion");
  j["choices"] = ojson::array({ojson{{"index", 0},
                                     {"text", text},
                                     {"logprobs", nullptr},
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
