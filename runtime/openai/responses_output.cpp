// Chat completions output -> Responses API output (see responses_api.hpp).
#include "runtime/openai/responses_output.hpp"

#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

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
};

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
      if (const json* msg = get(c, "message")) {
        if (const json* content = get(*msg, "content"); content && content->is_string())
          text_ = content->get<std::string>();
        if (const json* calls = get(*msg, "tool_calls"); calls && calls->is_array())
          for (const json& tc : *calls)
            add_call(tc, calls_.size());
      }
    }
    if (const json* u = get(j, "usage"))
      usage_ = *u;
    has_message_ = !text_.empty() || calls_.empty();
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
    const json* delta = get(c, "delta");
    if (!delta)
      return out;
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
    if (!has_message_ && calls_.empty())
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
    e["reasoning"] = ojson{{"effort", nullptr}, {"summary", nullptr}};
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

  [[nodiscard]] ojson message_item(const char* status) const {
    ojson part{{"type", "output_text"}, {"text", text_}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}};
    ojson content = ojson::array();
    if (std::string_view{status} == "completed")
      content.push_back(std::move(part));
    return ojson{{"id", msg_id()}, {"type", "message"}, {"status", status}, {"role", "assistant"},
                 {"content", std::move(content)}};
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
    uint64_t cached = 0;
    if (const json* d = get(usage_, "prompt_tokens_details"); d && d->is_object())
      cached = d->value("cached_tokens", uint64_t{0});
    return ojson{{"input_tokens", in},
                 // cache_write_tokens: required by the openai SDK (2.x), not yet in the document
                 {"input_tokens_details", ojson{{"cached_tokens", cached}, {"cache_write_tokens", 0}}},
                 {"output_tokens", outn},
                 {"output_tokens_details", ojson{{"reasoning_tokens", 0}}},
                 {"total_tokens", in + outn}};
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
    ojson output = ojson::array();
    if (done) {
      if (has_message_)
        output.push_back(message_item("completed"));
      for (const call_item& c : calls_)
        output.push_back(call_json(c, "completed"));
    }
    r["output"] = std::move(output);
    for (const char* key : {"parallel_tool_calls", "reasoning"})
      r[key] = echo_[key];
    r["previous_response_id"] = nullptr;
    r["store"] = false;
    for (const char* key : {"temperature", "text", "tool_choice", "tools", "top_p"})
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

  [[nodiscard]] size_t message_index() const { return 0; } // the message, when any, comes first

  void open_message(std::vector<sse_event>& out) {
    has_message_ = true;
    message_open_ = true;
    emit(out, "response.output_item.added", ojson{{"output_index", message_index()}, {"item", message_item("in_progress")}});
    emit(out, "response.content_part.added",
         ojson{{"item_id", msg_id()}, {"output_index", message_index()}, {"content_index", 0},
               {"part", ojson{{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}}}});
  }

  void text_delta(std::vector<sse_event>& out, std::string delta) {
    if (!has_message_ && calls_.empty())
      open_message(out);
    if (!message_open_)
      return; // text after a tool call: dropped (chat sends none)
    text_ += delta;
    emit(out, "response.output_text.delta",
         ojson{{"item_id", msg_id()}, {"output_index", message_index()}, {"content_index", 0},
               {"delta", std::move(delta)}, {"logprobs", ojson::array()}});
  }

  void close_message(std::vector<sse_event>& out) {
    if (!message_open_)
      return;
    message_open_ = false;
    ojson part{{"type", "output_text"}, {"text", text_}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}};
    emit(out, "response.output_text.done",
         ojson{{"item_id", msg_id()}, {"output_index", message_index()}, {"content_index", 0}, {"text", text_},
               {"logprobs", ojson::array()}});
    emit(out, "response.content_part.done",
         ojson{{"item_id", msg_id()}, {"output_index", message_index()}, {"content_index", 0}, {"part", std::move(part)}});
    emit(out, "response.output_item.done", ojson{{"output_index", message_index()}, {"item", message_item("completed")}});
  }

  [[nodiscard]] size_t call_output_index(size_t call) const { return (has_message_ ? 1 : 0) + call; }

  void add_call(const json& tc, size_t index) {
    call_item c;
    c.id = fmt::format("fc_{}_{}", hex_, index);
    c.call_id = tc.value("id", std::string{});
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
      close_message(out);
      close_call(out);
      add_call(tc, calls_.size());
      call_open_ = true;
      auto args = std::exchange(calls_.back().arguments, std::string{});
      emit(out, "response.output_item.added",
           ojson{{"output_index", call_output_index(calls_.size() - 1)}, {"item", call_json(calls_.back(), "in_progress")}});
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
         ojson{{"item_id", c.id}, {"output_index", call_output_index(calls_.size() - 1)}, {"delta", std::move(delta)}});
  }

  void close_call(std::vector<sse_event>& out) {
    if (!call_open_)
      return;
    call_open_ = false;
    const call_item& c = calls_.back();
    const size_t index = call_output_index(calls_.size() - 1);
    emit(out, "response.function_call_arguments.done",
         ojson{{"item_id", c.id}, {"output_index", index}, {"name", c.name}, {"arguments", c.arguments}});
    emit(out, "response.output_item.done", ojson{{"output_index", index}, {"item", call_json(c, "completed")}});
  }

  ojson echo_;
  std::string hex_;
  int64_t created_ = 0;
  std::string model_;
  std::string text_;
  std::string finish_;
  std::vector<call_item> calls_;
  json usage_;
  uint64_t seq_ = 0;
  bool created_sent_ = false;
  bool has_message_ = false;
  bool message_open_ = false;
  bool call_open_ = false;
};

} // namespace

std::unique_ptr<chat_dialect> make_responses_dialect(const nlohmann::json& request) {
  return std::make_unique<responses_dialect>(request);
}

} // namespace dynamo::openai
