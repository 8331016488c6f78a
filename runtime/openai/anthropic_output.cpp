// Chat completions output -> Anthropic Messages output (see anthropic_api.hpp).
#include "runtime/openai/anthropic_output.hpp"

#include "runtime/openai/json_fields.hpp"

#include "runtime/openai/anthropic_api.hpp"

#include <nlohmann/json.hpp>

namespace dynamo::openai {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

using detail::dump;

const json* get(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

/// chat finish_reason -> Anthropic stop_reason.
std::string stop_reason_of(const std::string& finish) {
  if (finish == "length")
    return "max_tokens";
  if (finish == "tool_calls")
    return "tool_use";
  return "end_turn";
}

/// A tool call's arguments as the `input` object (a non-object or broken
/// JSON from the model is wrapped, so the block stays well-formed).
ojson input_of(const std::string& arguments) {
  auto j = ojson::parse(arguments, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return ojson::object();
  return j;
}

ojson text_block(std::string text) {
  return ojson{{"type", "text"}, {"text", std::move(text)}, {"citations", nullptr}};
}

ojson tool_block(std::string id, std::string name, ojson input) {
  return ojson{{"type", "tool_use"}, {"id", std::move(id)}, {"name", std::move(name)},
               {"input", std::move(input)}, {"caller", ojson{{"type", "direct"}}}};
}

class anthropic_dialect final : public chat_dialect {
public:
  expected<std::string> body(std::string_view chat_completion) override {
    auto j = json::parse(chat_completion, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return make_error(errc::internal, "anthropic: the chat body is not JSON");
    identify(j);
    ojson content = ojson::array();
    std::string finish;
    if (const json* choices = get(j, "choices"); choices && choices->is_array() && !choices->empty()) {
      const json& c = (*choices)[0];
      finish = c.value("finish_reason", std::string{});
      if (const json* msg = get(c, "message")) {
        if (const json* text = get(*msg, "content"); text && text->is_string() && !text->get<std::string>().empty())
          content.push_back(text_block(text->get<std::string>()));
        if (const json* calls = get(*msg, "tool_calls"); calls && calls->is_array())
          for (const json& tc : *calls) {
            const json& fn = tc.contains("function") ? tc["function"] : json::object();
            content.push_back(tool_block(tc.value("id", std::string{}), fn.value("name", std::string{}),
                                         input_of(fn.value("arguments", std::string{"{}"}))));
          }
      }
    }
    if (content.empty())
      content.push_back(text_block(""));
    if (const json* u = get(j, "usage"))
      usage_ = *u;
    ojson m = message(std::move(content));
    m["stop_reason"] = stop_reason_of(finish);
    m["usage"] = usage_json(false);
    return dump(m);
  }

  std::vector<sse_event> push(std::string_view chat_chunk) override {
    std::vector<sse_event> out;
    auto j = json::parse(chat_chunk, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return out;
    if (!started_) {
      started_ = true;
      identify(j);
      ojson m = message(ojson::array());
      m["usage"] = usage_json(false); // the prompt's count comes with message_delta
      emit(out, "message_start", ojson{{"message", std::move(m)}});
      emit(out, "ping", ojson::object());
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
    if (const json* text = get(*delta, "content"); text && text->is_string() && !text->get<std::string>().empty()) {
      if (open_ != block::text) {
        close_block(out);
        open_block(out, text_block(""), block::text);
      }
      emit(out, "content_block_delta",
           ojson{{"index", index_}, {"delta", ojson{{"type", "text_delta"}, {"text", text->get<std::string>()}}}});
    }
    if (const json* calls = get(*delta, "tool_calls"); calls && calls->is_array())
      for (const json& tc : *calls)
        call_delta(out, tc);
    return out;
  }

  std::vector<sse_event> finish() override {
    std::vector<sse_event> out;
    if (open_ == block::none && index_ < 0)
      open_block(out, text_block(""), block::text); // always one block
    close_block(out);
    emit(out, "message_delta",
         ojson{{"delta", ojson{{"container", nullptr}, {"stop_details", nullptr},
                               {"stop_reason", stop_reason_of(finish_)}, {"stop_sequence", nullptr}}},
               {"usage", usage_json(true)}});
    emit(out, "message_stop", ojson::object());
    return out;
  }

  std::string error_body(const api_error& e) const override { return anthropic_error_body(e); }

  sse_event stream_error(const api_error& e) override { return {"error", anthropic_error_body(e)}; }

private:
  enum class block : uint8_t { none, text, tool };

  void identify(const json& chat) {
    std::string id = chat.value("id", std::string{});
    auto dash = id.find('-');
    id_ = "msg_" + (dash == std::string::npos ? id : id.substr(dash + 1));
    model_ = chat.value("model", std::string{});
  }

  [[nodiscard]] ojson message(ojson content) const {
    return ojson{{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_},
                 {"content", std::move(content)}, {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                 {"stop_details", nullptr}, {"container", nullptr}};
  }

  /// Anthropic usage; `delta`: the message_delta form (cumulative counts).
  [[nodiscard]] ojson usage_json(bool delta) const {
    const uint64_t in = usage_.is_object() ? usage_.value("prompt_tokens", uint64_t{0}) : 0;
    const uint64_t outn = usage_.is_object() ? usage_.value("completion_tokens", uint64_t{0}) : 0;
    uint64_t cached = 0;
    if (usage_.is_object())
      if (const json* d = get(usage_, "prompt_tokens_details"); d && d->is_object())
        cached = d->value("cached_tokens", uint64_t{0});
    ojson u{{"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", cached}, {"input_tokens", in},
            {"output_tokens", outn}, {"output_tokens_details", nullptr}, {"server_tool_use", nullptr}};
    if (!delta) { // the message's Usage has a few more (all null here)
      u["cache_creation"] = nullptr;
      u["inference_geo"] = nullptr;
      u["service_tier"] = nullptr;
    }
    return u;
  }

  void emit(std::vector<sse_event>& out, const char* type, ojson fields) {
    ojson j{{"type", type}};
    for (auto& [k, v] : fields.items())
      j[k] = std::move(v);
    out.push_back({type, dump(j)});
  }

  void open_block(std::vector<sse_event>& out, ojson content_block, block kind) {
    ++index_;
    open_ = kind;
    emit(out, "content_block_start", ojson{{"index", index_}, {"content_block", std::move(content_block)}});
  }

  void close_block(std::vector<sse_event>& out) {
    if (open_ == block::none)
      return;
    open_ = block::none;
    emit(out, "content_block_stop", ojson{{"index", index_}});
  }

  /// A streamed tool_calls entry: a new call opens a tool_use block, argument
  /// fragments are input_json_delta events.
  void call_delta(std::vector<sse_event>& out, const json& tc) {
    const int64_t call = tc.value("index", calls_);
    const json* fn = get(tc, "function");
    std::string args;
    if (fn && fn->is_object())
      if (const json* a = get(*fn, "arguments"); a && a->is_string())
        args = a->get<std::string>();
    if (call >= calls_) {
      calls_ = call + 1;
      close_block(out);
      std::string name = fn && fn->is_object() ? fn->value("name", std::string{}) : std::string{};
      open_block(out, tool_block(tc.value("id", std::string{}), name, ojson::object()), block::tool);
    }
    if (!args.empty())
      emit(out, "content_block_delta",
           ojson{{"index", index_}, {"delta", ojson{{"type", "input_json_delta"}, {"partial_json", args}}}});
  }

  std::string id_;
  std::string model_;
  std::string finish_;
  json usage_;
  block open_ = block::none;
  int64_t index_ = -1; ///< the last block's index
  int64_t calls_ = 0;  ///< tool calls seen
  bool started_ = false;
};

} // namespace

std::unique_ptr<chat_dialect> make_anthropic_dialect() { return std::make_unique<anthropic_dialect>(); }

} // namespace dynamo::openai
