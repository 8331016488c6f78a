// Fields shared by chat and completion requests, and the field lists.
#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>

namespace dynamo::openai {

namespace {

constexpr int64_t u32_max = std::numeric_limits<uint32_t>::max();

constexpr std::array<std::string_view, 26> chat_fields = {
  "model", "messages", "max_tokens", "max_completion_tokens", "min_tokens", "temperature",
  "top_p", "top_k", "seed", "stop", "n", "stream", "stream_options", "ignore_eos", "user",
  // accepted at their neutral value only
  "frequency_penalty", "presence_penalty", "repetition_penalty", "min_p", "logit_bias",
  "logprobs", "top_logprobs", "tools", "tool_choice", "response_format", "parallel_tool_calls"};

constexpr std::array<std::string_view, 23> completion_fields = {
  "model", "prompt", "max_tokens", "min_tokens", "temperature", "top_p", "top_k", "seed", "stop",
  "n", "stream", "stream_options", "ignore_eos", "user",
  // accepted at their neutral value only
  "frequency_penalty", "presence_penalty", "repetition_penalty", "min_p", "logit_bias",
  "logprobs", "echo", "best_of", "suffix"};

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

caf::error read_sampling(const json& obj, generation_params& out) {
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

caf::error read_lengths(const json& obj, generation_params& out) {
  std::optional<int64_t> max_tokens, min_tokens, n;
  if (auto err = detail::read_integer(obj, "max_tokens", 1, u32_max, max_tokens))
    return err;
  if (auto err = detail::read_integer(obj, "min_tokens", 0, u32_max, min_tokens))
    return err;
  if (auto err = detail::read_integer(obj, "n", 1, max_n, n))
    return err;
  if (n && *n != 1)
    return detail::unsupported_error("n", fmt::format("only n=1 is supported, got {}.", *n));
  if (max_tokens)
    out.max_tokens = static_cast<uint32_t>(*max_tokens);
  if (min_tokens)
    out.min_tokens = static_cast<uint32_t>(*min_tokens);
  return {};
}

caf::error check_unimplemented_common(const json& obj) {
  if (auto err = detail::check_neutral_number(obj, "frequency_penalty", -2.0, 2.0, 0.0))
    return err;
  if (auto err = detail::check_neutral_number(obj, "presence_penalty", -2.0, 2.0, 0.0))
    return err;
  if (auto err = detail::check_neutral_number(obj, "repetition_penalty", 0.0, 2.0, 1.0))
    return err;
  if (auto err = detail::check_neutral_number(obj, "min_p", 0.0, 1.0, 0.0))
    return err;
  return detail::check_empty(obj, "logit_bias", json::value_t::object);
}

} // namespace

namespace detail {

caf::error read_common(const json& obj, generation_params& out) {
  if (auto err = read_lengths(obj, out))
    return err;
  if (auto err = read_sampling(obj, out))
    return err;
  if (auto err = read_stop(obj, out.stop))
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
  return check_unimplemented_common(obj);
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
