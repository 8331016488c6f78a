#include "runtime/openai/preprocess.hpp"

#include "runtime/grammar/guided.hpp"

#include "runtime/openai/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dynamo::openai {

namespace {

/// The prompt's ids with the model's own special tokens (BOS unless the text
/// already starts with it, EOS when the vocabulary appends one), as llama.cpp.
std::vector<uint32_t> encode_text(std::string text, const tok::tokenizer& tk, bool parse_special) {
  std::erase(text, '\0'); // as Dynamo does before tokenization
  return tk.encode_prompt(text, parse_special);
}

caf::error check_lengths(size_t prompt_len, const generation_params& p,
                         const protocol::model_card& card, const char* prompt_param) {
  const uint32_t ctx = card.context_length;
  if (prompt_len == 0)
    return field_error(errc::invalid_argument, prompt_param, codes::invalid_value,
                       "The prompt is empty after tokenization.");
  if (prompt_len >= ctx)
    return field_error(errc::context_length_exceeded, prompt_param, codes::context_length_exceeded,
                       fmt::format("This model's maximum context length is {} tokens, but the "
                                   "prompt has {} tokens. Please shorten the prompt.",
                                   ctx, prompt_len));
  if (p.max_tokens && prompt_len + *p.max_tokens > ctx)
    return field_error(errc::context_length_exceeded, "max_tokens", codes::context_length_exceeded,
                       fmt::format("This model's maximum context length is {} tokens. However, "
                                   "you requested {} tokens ({} in the prompt, {} for the "
                                   "completion). Please reduce the prompt or max_tokens.",
                                   ctx, prompt_len + *p.max_tokens, prompt_len, *p.max_tokens));
  return {};
}

/// Token ids the client named (logit_bias keys, stop_token_ids) must be in the vocabulary.
caf::error check_token_ids(const generation_params& p, uint32_t vocab) {
  for (const protocol::token_bias& b : p.logit_bias)
    if (b.token >= vocab)
      return field_error(errc::invalid_argument, "logit_bias", codes::invalid_value,
                         fmt::format("Invalid value for 'logit_bias': token id {} is not below the "
                                     "vocabulary size {}.", b.token, vocab));
  for (size_t i = 0; i < p.stop_token_ids.size(); ++i)
    if (p.stop_token_ids[i] >= vocab)
      return field_error(errc::invalid_argument, fmt::format("stop_token_ids[{}]", i),
                         codes::invalid_value,
                         fmt::format("Invalid value for 'stop_token_ids[{}]': token id {} is not "
                                     "below the vocabulary size {}.", i, p.stop_token_ids[i], vocab));
  return {};
}

void set_sampling(const generation_params& p, protocol::sampling_options& s) {
  s.temperature = p.temperature.value_or(1.0f);
  s.top_p = p.top_p.value_or(1.0f);
  s.top_k = std::max(0, p.top_k.value_or(0)); // -1 (off) -> 0 (off)
  s.seed = p.seed;
  s.min_p = p.min_p.value_or(0.0f);
  s.presence_penalty = p.presence_penalty.value_or(0.0f);
  s.frequency_penalty = p.frequency_penalty.value_or(0.0f);
  s.repetition_penalty = p.repetition_penalty.value_or(1.0f);
  s.logit_bias = p.logit_bias;
  s.guided = p.guided;
  s.logprobs = p.logprobs;
  s.n = p.n;
}

expected<protocol::preprocessed_request> build(std::vector<uint32_t> ids,
                                               const generation_params& p,
                                               const protocol::model_card& card,
                                               const tok::tokenizer& tk, std::string request_id,
                                               const char* prompt_param) {
  if (card.context_length == 0)
    return make_error(errc::config_error, "model " + card.name + " has no context length");
  if (auto err = check_lengths(ids.size(), p, card, prompt_param))
    return err;
  if (auto err = check_token_ids(p, tk.vocab_size()))
    return err;
  protocol::preprocessed_request r;
  r.request_id = std::move(request_id);
  r.model = card.name;
  r.prompt_tokens = static_cast<uint32_t>(ids.size());
  const uint32_t remaining = card.context_length - r.prompt_tokens;
  r.stop.max_tokens = p.max_tokens.value_or(remaining);
  r.stop.min_tokens = p.min_tokens.value_or(0);
  if (r.stop.min_tokens > r.stop.max_tokens)
    return field_error(errc::invalid_argument, "min_tokens", codes::invalid_value,
                       fmt::format("Invalid value for 'min_tokens': must not exceed the {} tokens "
                                   "left in the context.", r.stop.max_tokens));
  r.stop.ignore_eos = p.ignore_eos;
  if (!p.ignore_eos)
    r.stop.stop_token_ids = tk.stop_token_ids();
  for (uint32_t id : p.stop_token_ids) // the client's, which ignore_eos leaves alone (vLLM)
    if (std::find(r.stop.stop_token_ids.begin(), r.stop.stop_token_ids.end(), id) ==
        r.stop.stop_token_ids.end())
      r.stop.stop_token_ids.push_back(id);
  set_sampling(p, r.sampling);
  r.token_ids = std::move(ids);
  return r;
}

/// A marker that the vocabulary holds as one control token (its text is
/// dropped by default detokenization).
bool is_control_token(const tok::tokenizer& tk, std::string_view marker) {
  auto ids = tk.encode(marker, /*parse_special=*/true);
  return ids.size() == 1 && tk.token_bytes(ids[0], false).empty() &&
         tk.token_bytes(ids[0], true) == marker;
}

bool ends_in_think(std::string_view prompt) {
  while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' ' || prompt.back() == '\r'))
    prompt.remove_suffix(1);
  return prompt.ends_with("<think>");
}

/// {"name", "parameters"} of the functions a forced call may use.
nlohmann::ordered_json forced_functions(const chat_request& req) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& t : req.chat.tools) {
    const auto& fn = t.at("function");
    const auto name = fn.at("name").get<std::string>();
    if (req.tool_choice == tool_choice_mode::named && name != req.tool_name)
      continue;
    auto params = fn.find("parameters");
    out.push_back({{"name", name},
                   {"parameters", params != fn.end() && !params->is_null()
                                    ? *params
                                    : nlohmann::ordered_json{{"type", "object"}, {"properties", nlohmann::ordered_json::object()}}}});
  }
  return out;
}

/// A completion-style prompt as token ids: text encoded with the model's
/// special tokens (special-token text parsed too, as HF tokenizers (vLLM) and
/// llama.cpp do, so a client can send an already templated prompt), or the
/// client's ids checked against the vocabulary.
expected<std::vector<uint32_t>> prompt_ids(const prompt_input& prompt, const tok::tokenizer& tk,
                                           const std::string& param) {
  if (const auto* text = std::get_if<std::string>(&prompt))
    return encode_text(*text, tk, /*parse_special=*/true);
  const auto& ids = std::get<std::vector<uint32_t>>(prompt);
  const uint32_t vocab = tk.vocab_size();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= vocab)
      return field_error(errc::invalid_argument, param, codes::invalid_value,
                         fmt::format("Invalid value for '{}': token id {} at position {} is "
                                     "not below the vocabulary size {}.", param, ids[i], i, vocab));
  return ids;
}

} // namespace

expected<protocol::preprocessed_request>
preprocess_chat(const chat_request& req, const protocol::model_card& card, const tok::tokenizer& tk,
                const tok::chat_template& tmpl, std::string request_id, const output_format& fmt,
                chat_parsing* parsing) {
  tok::chat_input in = req.chat;
  in.add_generation_prompt = true;
  auto text = tmpl.render(in);
  if (!text) {
    if (code_of(text.error()) == errc::invalid_argument)
      return field_error(errc::invalid_argument, "messages", codes::invalid_value,
                         message_of(text.error()));
    return std::move(text.error());
  }
  const bool tools = !req.chat.tools.is_null() && req.tool_choice != tool_choice_mode::none;
  const bool forced = tools && (req.tool_choice == tool_choice_mode::required ||
                                req.tool_choice == tool_choice_mode::named);
  tool_format tf = fmt.tools;
  if (forced && tf == tool_format::none)
    tf = tool_format::hermes; // the generic form, for the grammar and the parser alike
  chat_parsing plan;
  plan.parser.tools = tools ? tf : tool_format::none;
  plan.parser.reasoning = fmt.reasoning;
  plan.parser.starts_in_reasoning = fmt.reasoning && ends_in_think(*text);
  // parallel_tool_calls false (and a named choice): the reply ends with its first call.
  if (tools && (!req.parallel_tool_calls || req.tool_choice == tool_choice_mode::named))
    plan.parser.max_calls = 1;
  if (plan.parser.tools == tool_format::mistral)
    plan.include_special = is_control_token(tk, "[TOOL_CALLS]");
  else if (plan.parser.tools == tool_format::llama3_json)
    plan.include_special = is_control_token(tk, "<|python_tag|>");
  auto r = build(encode_text(std::move(*text), tk, /*parse_special=*/true), req.params, card, tk,
                 std::move(request_id), "messages");
  if (!r)
    return r;
  if (forced) {
    r->sampling.guided.kind = protocol::guided_kind::tool_calls;
    r->sampling.guided.spec = tool_calls_spec(
      tf, forced_functions(req), req.tool_choice == tool_choice_mode::required && req.parallel_tool_calls);
    // A parameter schema the grammar cannot express is the client's 400, here, not the worker's error.
    if (auto ok = gram::validate(r->sampling.guided); !ok)
      return field_error(errc::invalid_argument, "tools", codes::invalid_value,
                         "a forced tool call cannot be constrained: " + message_of(ok.error()));
  }
  if (parsing)
    *parsing = plan;
  return r;
}

expected<protocol::preprocessed_request>
preprocess_completion(const completion_request& req, const protocol::model_card& card,
                      const tok::tokenizer& tk, std::string request_id) {
  auto ids = prompt_ids(req.prompt, tk, "prompt");
  if (!ids)
    return std::move(ids.error());
  auto r = build(std::move(*ids), req.params, card, tk, std::move(request_id), "prompt");
  if (r && req.params.echo) {
    r->sampling.prompt_logprobs = req.params.logprobs; // logprobs cover the echoed prompt too
    if (r->stop.max_tokens == 0)
      r->stop.max_tokens = 1; // workers generate at least one token; the response drops it
  }
  return r;
}

expected<protocol::preprocessed_request>
preprocess_embedding(const prompt_input& input, const protocol::model_card& card,
                     const tok::tokenizer& tk, std::string request_id, const std::string& param) {
  auto ids = prompt_ids(input, tk, param);
  if (!ids)
    return std::move(ids.error());
  generation_params p;
  p.max_tokens = 1; // nothing is generated; the prompt alone must fit
  auto r = build(std::move(*ids), p, card, tk, std::move(request_id), param.c_str());
  if (!r)
    return r;
  r->embed = true;
  r->stop.stop_token_ids.clear();
  return r;
}

} // namespace dynamo::openai
