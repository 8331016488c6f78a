// Fields shared by chat and completion requests, and the field lists.
#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <string>

namespace dynamo::openai {

namespace {

constexpr int64_t u32_max = std::numeric_limits<uint32_t>::max();

constexpr std::array<std::string_view, 33> chat_fields = {
  "model", "messages", "max_tokens", "max_completion_tokens", "min_tokens", "temperature",
  "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids", "n", "stream", "stream_options",
  "ignore_eos", "user", "frequency_penalty", "presence_penalty", "repetition_penalty",
  "logit_bias", "logprobs", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls",
  "chat_template_kwargs", "response_format", "guided_json", "guided_regex", "guided_choice",
  "guided_grammar", "nvext"};

constexpr std::array<std::string_view, 30> completion_fields = {
  "model", "prompt", "max_tokens", "min_tokens", "temperature", "top_p", "top_k", "min_p", "seed",
  "stop", "stop_token_ids", "n", "stream", "stream_options", "ignore_eos", "user",
  "frequency_penalty", "presence_penalty", "repetition_penalty", "logit_bias", "logprobs",
  "response_format", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "nvext",
  "echo",
  // accepted at their neutral value only (best_of: equal to n)
  "best_of", "suffix"};

constexpr std::array<std::string_view, 5> roles = {"system", "developer", "user", "assistant",
                                                   "tool"};

using detail::json;

caf::error read_seed(const json& obj, std::optional<uint64_t>& out) {
  const json* f = detail::field(obj, "seed");
  if (!f)
    return {};
  if (!f->is_number_integer())
    return detail::type_error("seed", "an integer", *f);
  out = f->is_number_unsigned() ? f->get<uint64_t>() : static_cast<uint64_t>(f->get<int64_t>());
  return {};
}

caf::error read_stop(const json& obj, std::vector<std::string>& out) {
  const json* f = detail::field(obj, "stop");
  if (!f)
    return {};
  if (f->is_string()) {
    out.push_back(f->get<std::string>());
    return {};
  }
  if (!f->is_array())
    return detail::type_error("stop", "a string or an array of strings", *f);
  if (f->size() > max_stop_sequences)
    return detail::value_error("stop", fmt::format("at most {} stop sequences are allowed, got {}.",
                                                   max_stop_sequences, f->size()));
  for (size_t i = 0; i < f->size(); ++i) {
    const json& s = (*f)[i];
    if (!s.is_string())
      return detail::type_error(fmt::format("stop[{}]", i), "a string", s);
    out.push_back(s.get<std::string>());
  }
  return {};
}

caf::error read_stream(const json& obj, generation_params& out) {
  std::optional<bool> stream;
  if (auto err = detail::read_bool(obj, "stream", stream))
    return err;
  out.stream = stream.value_or(false);
  const json* opts = detail::field(obj, "stream_options");
  if (!opts)
    return {};
  if (!opts->is_object())
    return detail::type_error("stream_options", "an object", *opts);
  if (!out.stream)
    return detail::value_error("stream_options", "only allowed when 'stream' is true.");
  std::optional<bool> usage;
  if (const json* u = detail::field(*opts, "include_usage")) {
    if (!u->is_boolean())
      return detail::type_error("stream_options.include_usage", "a boolean", *u);
    usage = u->get<bool>();
  }
  out.include_usage = usage.value_or(false);
  return {};
}

caf::error read_penalties(const json& obj, generation_params& out) {
  std::optional<double> presence, frequency, repetition, min_p;
  if (auto err = detail::read_number(obj, "presence_penalty", -2.0, 2.0, presence))
    return err;
  if (auto err = detail::read_number(obj, "frequency_penalty", -2.0, 2.0, frequency))
    return err;
  if (auto err = detail::read_number(obj, "repetition_penalty", 0.0, 2.0, repetition))
    return err;
  if (repetition && *repetition <= 0.0)
    return detail::value_error("repetition_penalty", "must be greater than 0 (1 is neutral), got 0.");
  if (auto err = detail::read_number(obj, "min_p", 0.0, 1.0, min_p))
    return err;
  auto to_float = [](const std::optional<double>& v) -> std::optional<float> {
    return v ? std::optional{static_cast<float>(*v)} : std::nullopt;
  };
  out.presence_penalty = to_float(presence);
  out.frequency_penalty = to_float(frequency);
  out.repetition_penalty = to_float(repetition);
  out.min_p = to_float(min_p);
  return {};
}

// logit_bias: {"<token id>": bias, ...}, bias in [-100, 100].
caf::error read_logit_bias(const json& obj, std::vector<protocol::token_bias>& out) {
  const json* f = detail::field(obj, "logit_bias");
  if (!f)
    return {};
  if (!f->is_object())
    return detail::type_error("logit_bias", "an object mapping token ids to numbers", *f);
  if (f->size() > protocol::max_logit_bias)
    return detail::value_error("logit_bias", fmt::format("at most {} entries are allowed, got {}.",
                                                         protocol::max_logit_bias, f->size()));
  for (const auto& [key, value] : f->items()) {
    uint64_t id = 0;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key)
      digits = digits && c >= '0' && c <= '9';
    if (digits)
      id = std::stoull(key);
    if (!digits || id > std::numeric_limits<uint32_t>::max())
      return detail::value_error("logit_bias", fmt::format("keys are token ids (non-negative "
                                                           "integers), got '{}'.", key));
    if (!value.is_number())
      return detail::type_error(fmt::format("logit_bias.{}", key), "a number", value);
    const double bias = value.get<double>();
    if (!(bias >= -100.0 && bias <= 100.0))
      return detail::value_error("logit_bias", fmt::format("the bias of token {} must be in "
                                                           "[-100, 100], got {}.", key, value.dump()));
    out.push_back({static_cast<uint32_t>(id), static_cast<float>(bias)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.token < b.token; });
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i].token == out[i - 1].token) // "7" and "07"
      return detail::value_error("logit_bias", fmt::format("token {} appears twice.", out[i].token));
  return {};
}

caf::error read_stop_token_ids(const json& obj, std::vector<uint32_t>& out) {
  const json* f = detail::field(obj, "stop_token_ids");
  if (!f)
    return {};
  if (!f->is_array())
    return detail::type_error("stop_token_ids", "an array of token ids", *f);
  if (f->size() > max_stop_sequences)
    return detail::value_error("stop_token_ids", fmt::format("at most {} ids are allowed, got {}.",
                                                             max_stop_sequences, f->size()));
  for (size_t i = 0; i < f->size(); ++i) {
    const json& t = (*f)[i];
    if (!t.is_number_unsigned() || t.get<uint64_t>() > std::numeric_limits<uint32_t>::max())
      return detail::value_error(fmt::format("stop_token_ids[{}]", i),
                                 fmt::format("token ids are integers in [0, 4294967295], got {}.",
                                             t.dump()));
    out.push_back(static_cast<uint32_t>(t.get<uint64_t>()));
  }
  return {};
}

caf::error read_sampling(const json& obj, generation_params& out) {
  if (auto err = read_penalties(obj, out))
    return err;
  if (auto err = read_logit_bias(obj, out.logit_bias))
    return err;
  std::optional<double> temperature, top_p;
  std::optional<int64_t> top_k;
  if (auto err = detail::read_number(obj, "temperature", 0.0, 2.0, temperature))
    return err;
  if (auto err = detail::read_number(obj, "top_p", 0.0, 1.0, top_p))
    return err;
  if (auto err = detail::read_integer(obj, "top_k", -1, std::numeric_limits<int32_t>::max(), top_k))
    return err;
  if (top_k && *top_k == 0)
    return detail::value_error("top_k", "must be -1 (disabled) or at least 1, got 0.");
  if (temperature)
    out.temperature = static_cast<float>(*temperature);
  if (top_p)
    out.top_p = static_cast<float>(*top_p);
  if (top_k)
    out.top_k = static_cast<int32_t>(*top_k);
  return read_seed(obj, out.seed);
}

caf::error read_lengths(const json& obj, generation_params& out, int64_t min_max_tokens) {
  std::optional<int64_t> max_tokens, min_tokens, n;
  if (auto err = detail::read_integer(obj, "max_tokens", min_max_tokens, u32_max, max_tokens))
    return err;
  if (auto err = detail::read_integer(obj, "min_tokens", 0, u32_max, min_tokens))
    return err;
  if (auto err = detail::read_integer(obj, "n", 1, max_n, n))
    return err;
  out.n = static_cast<uint32_t>(n.value_or(1));
  if (max_tokens)
    out.max_tokens = static_cast<uint32_t>(*max_tokens);
  if (min_tokens)
    out.min_tokens = static_cast<uint32_t>(*min_tokens);
  return {};
}

} // namespace

namespace detail {

caf::error read_common(const json& obj, generation_params& out, int64_t min_max_tokens) {
  if (auto err = read_lengths(obj, out, min_max_tokens))
    return err;
  if (auto err = read_sampling(obj, out))
    return err;
  if (auto err = read_stop(obj, out.stop))
    return err;
  if (auto err = read_stop_token_ids(obj, out.stop_token_ids))
    return err;
  if (auto err = read_stream(obj, out))
    return err;
  std::optional<bool> ignore_eos;
  if (auto err = read_bool(obj, "ignore_eos", ignore_eos))
    return err;
  out.ignore_eos = ignore_eos.value_or(false);
  if (auto err = read_string(obj, "user", out.user))
    return err;
  if (out.user && out.user->empty())
    return value_error("user", "must not be empty.");
  return read_guided(obj, out.guided);
}

caf::error check_min_tokens(const generation_params& p) {
  if (p.min_tokens && p.max_tokens && *p.min_tokens > *p.max_tokens)
    return value_error("min_tokens", fmt::format("must not exceed max_tokens ({}), got {}.",
                                                 *p.max_tokens, *p.min_tokens));
  return {};
}

} // namespace detail

std::span<const std::string_view> chat_request_fields() noexcept { return chat_fields; }
std::span<const std::string_view> completion_request_fields() noexcept { return completion_fields; }
std::span<const std::string_view> chat_roles() noexcept { return roles; }

} // namespace dynamo::openai
