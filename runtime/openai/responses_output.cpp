// Chat completions output -> Responses API output (see responses_api.hpp).
#include "runtime/openai/responses_output.hpp"

#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace dynamo::openai {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

using detail::dump;

ojson copy(const json* v, ojson fallback) { return v && !v->is_null() ? ojson::parse(v->dump()) : fallback; }

const json* get(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

/// The hex part of "chatcmpl-<hex>", the id every item id derives from.
std::string hex_of(const json& chunk) {
  std::string id = chunk.value("id", std::string{});
  auto dash = id.find('-');
  return dash == std::string::npos ? id : id.substr(dash + 1);
}

/// One function call of the response being built.
struct call_item {
  std::string id; ///< fc_...
  std::string call_id;
  std::string name;
  std::string arguments;
  size_t at = 0; ///< output_index
};

/// A chat logprobs entry (token, logprob, bytes, top_logprobs with bytes) in
/// the two Responses shapes: LogProb (the output_text part, with bytes) and
/// ResponseLogProb (the stream's text deltas, without).
ojson logprob_entry(const json& e, bool with_bytes) {
  ojson out{{"token", e.value("token", std::string{})}, {"logprob", e.value("logprob", 0.0)}};
  if (with_bytes)
    out["bytes"] = copy(get(e, "bytes"), ojson::array());
  ojson top = ojson::array();
  if (const json* alts = get(e, "top_logprobs"); alts && alts->is_array())
    for (const json& a : *alts)
      if (a.is_object()) {
        ojson alt{{"token", a.value("token", std::string{})}, {"logprob", a.value("logprob", 0.0)}};
        if (with_bytes)
          alt["bytes"] = copy(get(a, "bytes"), ojson::array());
        top.push_back(std::move(alt));
      }
  out["top_logprobs"] = std::move(top);
  return out;
}

/// The `logprobs.content` entries of a chat choice (whole body or chunk).
std::vector<json> logprobs_of(const json& choice) {
  std::vector<json> out;
  if (const json* lp = get(choice, "logprobs"); lp && lp->is_object())
    if (const json* content = get(*lp, "content"); content && content->is_array())
      for (const json& e : *content)
        if (e.is_object())
          out.push_back(e);
  return out;
}

/// Output items in the order they were opened: the reasoning (when the model
/// thought), the message, then the function calls. Logprobs cover every
/// generated token as chat's do (reasoning included) and go to the message's
/// text: whole, in its output_text part; streamed, on the next text delta.
class responses_dialect final : public chat_dialect {
public:
  explicit responses_dialect(const json& req) : echo_(echo_fields(req)) {}

  expected<std::string> body(std::string_view chat_completion) override {
    auto j = json::parse(chat_completion, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return make_error(errc::internal, "responses: the chat body is not JSON");
    identify(j);
    if (const json* choices = get(j, "choices"); choices && choices->is_array() && !choices->empty()) {
      const json& c = (*choices)[0];
      finish_ = c.value("finish_reason", std::string{});
      logprobs_ = logprobs_of(c);
      if (const json* msg = get(c, "message")) {
        if (const json* r = get(*msg, "reasoning_content"); r && r->is_string() && !r->get_ref<const std::string&>().empty()) {
          reasoning_ = r->get<std::string>();
          reasoning_at_ = next_at_++;
        }
        if (const json* content = get(*msg, "content"); content && content->is_string())
          text_ = content->get<std::string>();
        const json* calls = get(*msg, "tool_calls");
        if (!text_.empty() || !calls || !calls->is_array() || calls->empty())
          message_at_ = next_at_++;
        if (calls && calls->is_array())
          for (const json& tc : *calls)
            add_call(tc);
      }
    }
    if (!message_at_ && calls_.empty())
      message_at_ = next_at_++;
    if (const json* u = get(j, "usage"))
      usage_ = *u;
    return dump(response(final_status()));
  }

  std::vector<sse_event> push(std::string_view chat_chunk) override {
    std::vector<sse_event> out;
    auto j = json::parse(chat_chunk, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return out;
    if (!created_sent_) {
      identify(j);
      created_sent_ = true;
      emit(out, "response.created", ojson{{"response", response("in_progress")}});
      emit(out, "response.in_progress", ojson{{"response", response("in_progress")}});
    }
    if (const json* u = get(j, "usage"); u && u->is_object())
      usage_ = *u;
    const json* choices = get(j, "choices");
    if (!choices || !choices->is_array() || choices->empty())
      return out;
    const json& c = (*choices)[0];
    if (const json* fr = get(c, "finish_reason"); fr && fr->is_string())
      finish_ = fr->get<std::string>();
    for (json& e : logprobs_of(c))
      pending_logprobs_.push_back(std::move(e));
    const json* delta = get(c, "delta");
    if (!delta)
      return out;
    if (const json* r = get(*delta, "reasoning_content"); r && r->is_string() &&
                                                          !r->get_ref<const std::string&>().empty())
      reasoning_delta(out, r->get<std::string>());
    if (const json* content = get(*delta, "content"); content && content->is_string() &&
                                                      !content->get_ref<const std::string&>().empty())
      text_delta(out, content->get<std::string>());
    if (const json* calls = get(*delta, "tool_calls"); calls && calls->is_array())
      for (const json& tc : *calls)
        call_delta(out, tc);
    return out;
  }

  std::vector<sse_event> finish() override {
    std::vector<sse_event> out;
    close_reasoning(out);
    if (!message_at_ && calls_.empty())
      open_message(out); // an empty answer is still one (empty) message
    close_message(out);
    close_call(out);
    auto status = final_status();
    emit(out, status == "completed" ? "response.completed" : "response.incomplete",
         ojson{{"response", response(status)}});
    return out;
  }

  std::string error_body(const api_error& e) const override { return openai::error_body(e); }

  sse_event stream_error(const api_error& e) override {
    ojson j{{"type", "error"},
            {"code", e.code.empty() ? ojson(e.type) : ojson(e.code)},
            {"message", e.message},
            {"param", e.param.empty() ? ojson(nullptr) : ojson(e.param)},
            {"sequence_number", seq_++}};
    return {"error", dump(j)};
  }

private:
  static ojson echo_fields(const json& req) {
    ojson e = ojson::object();
    e["instructions"] = copy(get(req, "instructions"), nullptr);
    e["max_output_tokens"] = copy(get(req, "max_output_tokens"), nullptr);
    e["metadata"] = copy(get(req, "metadata"), ojson::object());
    e["parallel_tool_calls"] = copy(get(req, "parallel_tool_calls"), true);
    e["temperature"] = copy(get(req, "temperature"), 1.0);
    e["top_p"] = copy(get(req, "top_p"), 1.0);
    e["top_logprobs"] = copy(get(req, "top_logprobs"), nullptr);
    e["tool_choice"] = copy(get(req, "tool_choice"), "auto");
    e["tools"] = copy(get(req, "tools"), ojson::array());
    for (auto& t : e["tools"]) // FunctionTool: strict and parameters are required (nullable)
      if (t.is_object()) {
        if (!t.contains("strict"))
          t["strict"] = nullptr;
        if (!t.contains("parameters"))
          t["parameters"] = nullptr;
      }
    ojson text{{"format", ojson{{"type", "text"}}}};
    if (const json* t = get(req, "text"); t && t->is_object() && t->contains("format"))
      text = ojson::parse(t->dump());
    e["text"] = std::move(text);
    ojson reasoning{{"effort", nullptr}, {"summary", nullptr}};
    if (const json* r = get(req, "reasoning"); r && r->is_object())
      for (const char* key : {"effort", "summary"})
        reasoning[key] = copy(get(*r, key), nullptr);
    e["reasoning"] = std::move(reasoning);
    e["user"] = copy(get(req, "user"), nullptr);
    return e;
  }

  void identify(const json& chat) {
    hex_ = hex_of(chat);
    created_ = chat.value("created", int64_t{0});
    model_ = chat.value("model", std::string{});
  }

  [[nodiscard]] std::string final_status() const {
    return finish_ == "length" ? "incomplete" : "completed";
  }

  [[nodiscard]] std::string msg_id() const { return "msg_" + hex_; }
  [[nodiscard]] std::string rs_id() const { return "rs_" + hex_; }

  [[nodiscard]] ojson text_part(const std::string& text) const {
    ojson lps = ojson::array();
    for (const json& e : logprobs_)
      lps.push_back(logprob_entry(e, true));
    return ojson{{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}, {"logprobs", std::move(lps)}};
  }

  [[nodiscard]] ojson message_item(const char* status) const {
    ojson content = ojson::array();
    if (std::string_view{status} == "completed")
      content.push_back(text_part(text_));
    return ojson{{"id", msg_id()}, {"type", "message"}, {"status", status}, {"role", "assistant"},
                 {"content", std::move(content)}};
  }

  [[nodiscard]] ojson reasoning_item(const char* status) const {
    ojson content = ojson::array();
    if (std::string_view{status} == "completed")
      content.push_back(ojson{{"type", "reasoning_text"}, {"text", reasoning_}});
    return ojson{{"id", rs_id()}, {"type", "reasoning"}, {"summary", ojson::array()},
                 {"content", std::move(content)}, {"encrypted_content", nullptr}, {"status", status}};
  }

  [[nodiscard]] static ojson call_json(const call_item& c, const char* status) {
    return ojson{{"id", c.id}, {"type", "function_call"}, {"status", status}, {"arguments", c.arguments},
                 {"call_id", c.call_id}, {"name", c.name}};
  }

  [[nodiscard]] ojson usage_json() const {
    if (!usage_.is_object())
      return nullptr;
    const uint64_t in = usage_.value("prompt_tokens", uint64_t{0});
    const uint64_t outn = usage_.value("completion_tokens", uint64_t{0});
    uint64_t cached = 0, reasoning = 0;
    if (const json* d = get(usage_, "prompt_tokens_details"); d && d->is_object())
      cached = d->value("cached_tokens", uint64_t{0});
    if (const json* d = get(usage_, "completion_tokens_details"); d && d->is_object())
      reasoning = d->value("reasoning_tokens", uint64_t{0});
    return ojson{{"input_tokens", in},
                 // cache_write_tokens: required by the openai SDK (2.x), not yet in the document
                 {"input_tokens_details", ojson{{"cached_tokens", cached}, {"cache_write_tokens", 0}}},
                 {"output_tokens", outn},
                 {"output_tokens_details", ojson{{"reasoning_tokens", reasoning}}},
                 {"total_tokens", in + outn}};
  }

  /// The finished items by output_index.
  [[nodiscard]] ojson output_items() const {
    std::vector<std::pair<size_t, ojson>> items;
    if (reasoning_at_)
      items.emplace_back(*reasoning_at_, reasoning_item("completed"));
    if (message_at_)
      items.emplace_back(*message_at_, message_item("completed"));
    for (const call_item& c : calls_)
      items.emplace_back(c.at, call_json(c, "completed"));
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    ojson output = ojson::array();
    for (auto& [at, item] : items)
      output.push_back(std::move(item));
    return output;
  }

  /// The response object; `status` in_progress has no output and no usage.
  [[nodiscard]] ojson response(const std::string& status) const {
    const bool done = status != "in_progress";
    ojson r{{"id", "resp_" + hex_}, {"object", "response"}, {"created_at", created_}, {"status", status}};
    r["completed_at"] = status == "completed" ? ojson(created_) : ojson(nullptr);
    r["error"] = nullptr;
    r["incomplete_details"] = status == "incomplete" ? ojson{{"reason", "max_output_tokens"}} : ojson(nullptr);
    r["instructions"] = echo_["instructions"];
    r["max_output_tokens"] = echo_["max_output_tokens"];
    r["model"] = model_;
    r["output"] = done ? output_items() : ojson::array();
    for (const char* key : {"parallel_tool_calls", "reasoning"})
      r[key] = echo_[key];
    r["previous_response_id"] = nullptr;
    r["store"] = false;
    for (const char* key : {"temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p"})
      r[key] = echo_[key];
    r["truncation"] = "disabled";
    if (done && usage_.is_object())
      r["usage"] = usage_json(); // an object in the schema: absent until known
    if (!echo_["user"].is_null())
      r["user"] = echo_["user"]; // a string in the schema: absent, not null, when not given
    r["metadata"] = echo_["metadata"];
    return r;
  }

  void emit(std::vector<sse_event>& out, const char* type, ojson fields) {
    ojson j{{"type", type}};
    for (auto& [k, v] : fields.items())
      j[k] = std::move(v);
    j["sequence_number"] = seq_++;
    out.push_back({type, dump(j)});
  }

  void reasoning_delta(std::vector<sse_event>& out, std::string delta) {
    if (!reasoning_at_) {
      if (message_at_ || !calls_.empty())
        return; // thinking after the answer began: not a reasoning item of this response
      reasoning_at_ = next_at_++;
      reasoning_open_ = true;
      emit(out, "response.output_item.added", ojson{{"output_index", *reasoning_at_}, {"item", reasoning_item("in_progress")}});
      emit(out, "response.content_part.added",
           ojson{{"item_id", rs_id()}, {"output_index", *reasoning_at_}, {"content_index", 0},
                 {"part", ojson{{"type", "reasoning_text"}, {"text", ""}}}});
    }
    if (!reasoning_open_)
      return;
    reasoning_ += delta;
    emit(out, "response.reasoning_text.delta",
         ojson{{"item_id", rs_id()}, {"output_index", *reasoning_at_}, {"content_index", 0}, {"delta", std::move(delta)}});
  }

  void close_reasoning(std::vector<sse_event>& out) {
    if (!reasoning_open_)
      return;
    reasoning_open_ = false;
    const size_t at = *reasoning_at_;
    emit(out, "response.reasoning_text.done",
         ojson{{"item_id", rs_id()}, {"output_index", at}, {"content_index", 0}, {"text", reasoning_}});
    emit(out, "response.content_part.done",
         ojson{{"item_id", rs_id()}, {"output_index", at}, {"content_index", 0},
               {"part", ojson{{"type", "reasoning_text"}, {"text", reasoning_}}}});
    emit(out, "response.output_item.done", ojson{{"output_index", at}, {"item", reasoning_item("completed")}});
  }

  void open_message(std::vector<sse_event>& out) {
    close_reasoning(out);
    message_at_ = next_at_++;
    message_open_ = true;
    emit(out, "response.output_item.added", ojson{{"output_index", *message_at_}, {"item", message_item("in_progress")}});
    emit(out, "response.content_part.added",
         ojson{{"item_id", msg_id()}, {"output_index", *message_at_}, {"content_index", 0},
               {"part", ojson{{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}}}});
  }

  void text_delta(std::vector<sse_event>& out, std::string delta) {
    if (!message_at_ && calls_.empty())
      open_message(out);
    if (!message_open_)
      return; // text after a tool call: dropped (chat sends none)
    text_ += delta;
    ojson lps = ojson::array();
    for (json& e : pending_logprobs_) {
      lps.push_back(logprob_entry(e, false));
      logprobs_.push_back(std::move(e));
    }
    pending_logprobs_.clear();
    emit(out, "response.output_text.delta",
         ojson{{"item_id", msg_id()}, {"output_index", *message_at_}, {"content_index", 0},
               {"delta", std::move(delta)}, {"logprobs", std::move(lps)}});
  }

  void close_message(std::vector<sse_event>& out) {
    if (!message_open_)
      return;
    message_open_ = false;
    for (json& e : pending_logprobs_) // tokens after the last text (e.g. the end token)
      logprobs_.push_back(std::move(e));
    pending_logprobs_.clear();
    const size_t at = *message_at_;
    ojson part = text_part(text_);
    emit(out, "response.output_text.done",
         ojson{{"item_id", msg_id()}, {"output_index", at}, {"content_index", 0}, {"text", text_},
               {"logprobs", part["logprobs"]}});
    emit(out, "response.content_part.done",
         ojson{{"item_id", msg_id()}, {"output_index", at}, {"content_index", 0}, {"part", std::move(part)}});
    emit(out, "response.output_item.done", ojson{{"output_index", at}, {"item", message_item("completed")}});
  }

  void add_call(const json& tc) {
    call_item c;
    c.id = fmt::format("fc_{}_{}", hex_, calls_.size());
    c.call_id = tc.value("id", std::string{});
    c.at = next_at_++;
    if (const json* fn = get(tc, "function"); fn && fn->is_object()) {
      c.name = fn->value("name", std::string{});
      if (const json* args = get(*fn, "arguments"); args && args->is_string())
        c.arguments = args->get<std::string>();
    }
    calls_.push_back(std::move(c));
  }

  /// A streamed tool_calls entry: a new call (id and name), or more arguments.
  void call_delta(std::vector<sse_event>& out, const json& tc) {
    const size_t index = tc.value("index", calls_.size());
    if (index >= calls_.size()) {
      close_reasoning(out);
      close_message(out);
      close_call(out);
      add_call(tc);
      call_open_ = true;
      auto args = std::exchange(calls_.back().arguments, std::string{});
      emit(out, "response.output_item.added",
           ojson{{"output_index", calls_.back().at}, {"item", call_json(calls_.back(), "in_progress")}});
      if (!args.empty())
        args_delta(out, std::move(args));
      return;
    }
    if (const json* fn = get(tc, "function"); fn && fn->is_object())
      if (const json* args = get(*fn, "arguments"); args && args->is_string() &&
                                                    !args->get_ref<const std::string&>().empty())
        args_delta(out, args->get<std::string>());
  }

  void args_delta(std::vector<sse_event>& out, std::string delta) {
    call_item& c = calls_.back();
    c.arguments += delta;
    emit(out, "response.function_call_arguments.delta",
         ojson{{"item_id", c.id}, {"output_index", c.at}, {"delta", std::move(delta)}});
  }

  void close_call(std::vector<sse_event>& out) {
    if (!call_open_)
      return;
    call_open_ = false;
    const call_item& c = calls_.back();
    emit(out, "response.function_call_arguments.done",
         ojson{{"item_id", c.id}, {"output_index", c.at}, {"name", c.name}, {"arguments", c.arguments}});
    emit(out, "response.output_item.done", ojson{{"output_index", c.at}, {"item", call_json(c, "completed")}});
  }

  ojson echo_;
  std::string hex_;
  int64_t created_ = 0;
  std::string model_;
  std::string reasoning_;
  std::string text_;
  std::string finish_;
  std::vector<call_item> calls_;
  std::vector<json> logprobs_;         ///< the message's, in token order
  std::vector<json> pending_logprobs_; ///< streamed, not yet on a text delta
  json usage_;
  uint64_t seq_ = 0;
  size_t next_at_ = 0; ///< the next output item's output_index
  std::optional<size_t> reasoning_at_;
  std::optional<size_t> message_at_;
  bool created_sent_ = false;
  bool reasoning_open_ = false;
  bool message_open_ = false;
  bool call_open_ = false;
};

} // namespace

std::unique_ptr<chat_dialect> make_responses_dialect(const nlohmann::json& request) {
  return std::make_unique<responses_dialect>(request);
}

} // namespace dynamo::openai
