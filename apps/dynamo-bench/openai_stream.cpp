#include "apps/dynamo-bench/openai_stream.hpp"

#include <nlohmann/json.hpp>

#include <iterator>

namespace dynamo::bench {

using json = nlohmann::json;

expected<std::string> resolve_model(http::http_client& client) {
  auto res = client.request({"GET", "/v1/models", "", ""}, std::chrono::seconds(10));
  if (!res)
    return res.error();
  auto j = json::parse(res->body, nullptr, false);
  if (res->status != 200 || j.is_discarded() || !j.contains("data") || j["data"].empty())
    return make_error(errc::not_found, "GET /v1/models returned no model: " + res->body);
  return j["data"][0].value("id", std::string{});
}

namespace {

json body_head(const load_config& cfg, uint32_t osl) {
  return json{{"model", cfg.model}, {"max_tokens", osl}, {"stream", true},
              {"stream_options", {{"include_usage", true}}}, {"ignore_eos", true},
              {"temperature", 0}};
}

} // namespace

std::string make_body(const load_config& cfg, const std::vector<uint32_t>& prompt, uint32_t osl) {
  json body = body_head(cfg, osl);
  body["prompt"] = prompt;
  return body.dump();
}

std::string make_body(const load_config& cfg, uint32_t isl, uint32_t osl, std::mt19937_64& rng) {
  std::uniform_int_distribution<uint32_t> tok(cfg.token_lo, cfg.token_hi);
  json body = body_head(cfg, osl);
  if (cfg.endpoint == "chat") {
    static const char* words[] = {"alpha", "beta", "gamma", "delta", "river", "stone",
                                  "cloud", "market", "engine", "paper", "light", "music"};
    std::string text;
    for (uint32_t i = 0; i < isl; ++i) {
      text += words[rng() % std::size(words)];
      text += ' ';
    }
    body["messages"] = json::array({{{"role", "user"}, {"content", text}}});
  } else {
    std::vector<uint32_t> ids(isl);
    for (auto& id : ids)
      id = tok(rng);
    body["prompt"] = ids;
  }
  return body.dump();
}

std::string_view target_of(const load_config& cfg) noexcept {
  return cfg.endpoint == "chat" ? "/v1/chat/completions" : "/v1/completions";
}

stream_event read_event(const sse_event& ev) {
  stream_event out;
  if (ev.data == "[DONE]") {
    out.done = true;
    return out;
  }
  if (ev.event == "error") {
    out.error = "stream error: " + ev.data;
    return out;
  }
  auto j = json::parse(ev.data, nullptr, false);
  if (j.is_discarded())
    return out;
  if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens"))
    out.completion_tokens = j["usage"].value("completion_tokens", uint64_t{0});
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    return out;
  const auto& c = j["choices"][0];
  std::string text;
  if (c.contains("text") && c["text"].is_string())
    text = c["text"].get<std::string>();
  else if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
    text = c["delta"]["content"].get<std::string>();
  out.content_tokens = text.empty() ? 0 : 1;
  return out;
}

} // namespace dynamo::bench
