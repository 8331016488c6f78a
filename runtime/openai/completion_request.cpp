// POST /v1/completions body -> completion_request.
#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <limits>

namespace dynamo::openai {

namespace {

using detail::json;

bool all_of_type(const json& arr, bool (json::*pred)() const noexcept) {
  for (const auto& e : arr)
    if (!(e.*pred)())
      return false;
  return true;
}

caf::error read_token_ids(const json& arr, const std::string& param, std::vector<uint32_t>& out) {
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& t = arr[i];
    if (!t.is_number_unsigned() || t.get<uint64_t>() > std::numeric_limits<uint32_t>::max())
      return detail::value_error(fmt::format("{}[{}]", param, i),
                                 fmt::format("token ids are integers in [0, 4294967295], got {}.",
                                             t.dump()));
    out.push_back(static_cast<uint32_t>(t.get<uint64_t>()));
  }
  return {};
}

// prompt: "text" | ["text"] | [1, 2, 3] | [[1, 2, 3]]. Several prompts in one
// request (batching) are unsupported: send one request per prompt.
caf::error read_prompt(const json& obj, prompt_input& out) {
  const json* p = detail::field(obj, "prompt");
  if (!p)
    return detail::missing_error("prompt");
  if (p->is_string()) {
    if (p->get_ref<const std::string&>().empty())
      return detail::value_error("prompt", "must not be empty.");
    out = p->get<std::string>();
    return {};
  }
  if (!p->is_array())
    return detail::type_error("prompt", "a string, an array of strings or an array of token ids",
                              *p);
  if (p->empty())
    return detail::value_error("prompt", "must not be an empty array.");
  if (all_of_type(*p, &json::is_number_integer)) {
    std::vector<uint32_t> ids;
    if (auto err = read_token_ids(*p, "prompt", ids))
      return err;
    out = std::move(ids);
    return {};
  }
  const bool strings = all_of_type(*p, &json::is_string);
  const bool arrays = all_of_type(*p, &json::is_array);
  if (!strings && !arrays)
    return detail::type_error("prompt", "a string, an array of strings or an array of token ids",
                              *p);
  if (p->size() > 1)
    return detail::unsupported_error("prompt", fmt::format("one prompt per request is supported, "
                                                           "got {}.", p->size()));
  if (strings) {
    const auto& text = (*p)[0].get_ref<const std::string&>();
    if (text.empty())
      return detail::value_error("prompt[0]", "must not be empty.");
    out = text;
    return {};
  }
  const json& ids = (*p)[0];
  if (ids.empty())
    return detail::value_error("prompt[0]", "must not be an empty array.");
  std::vector<uint32_t> tokens;
  if (auto err = read_token_ids(ids, "prompt[0]", tokens))
    return err;
  out = std::move(tokens);
  return {};
}

/// echo, read before the common fields: it allows max_tokens 0.
caf::error read_echo(const json& obj, generation_params& out) {
  std::optional<bool> echo;
  if (auto err = detail::read_bool(obj, "echo", echo))
    return err;
  out.echo = echo.value_or(false);
  return {};
}

caf::error read_completion_options(const json& obj, generation_params& out) {
  std::optional<int64_t> logprobs, best_of;
  std::optional<std::string> suffix;
  if (auto err = detail::read_integer(obj, "logprobs", 0, max_completion_logprobs, logprobs))
    return err;
  if (logprobs)
    out.logprobs = static_cast<uint32_t>(*logprobs);
  if (out.echo && out.n > 1)
    return detail::unsupported_error("echo", fmt::format("echo is supported with n = 1 only, got "
                                                         "n = {}.", out.n));
  if (auto err = detail::read_integer(obj, "best_of", 1, max_n, best_of))
    return err;
  if (best_of && *best_of < out.n)
    return detail::value_error("best_of", fmt::format("must be at least n ({}), got {}.", out.n,
                                                      *best_of));
  if (best_of && *best_of != out.n)
    return detail::unsupported_error("best_of", "only best_of equal to n is supported (every "
                                                "generated choice is returned).");
  if (auto err = detail::read_string(obj, "suffix", suffix))
    return err;
  if (suffix && !suffix->empty())
    return detail::unsupported_error("suffix", "suffixes (insertion) are not supported.");
  return {};
}

} // namespace

expected<completion_request> parse_completion_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  completion_request out;
  if (auto err = detail::read_model(*obj, out.model))
    return err;
  if (auto err = read_prompt(*obj, out.prompt))
    return err;
  if (auto err = read_echo(*obj, out.params))
    return err;
  if (auto err = detail::read_common(*obj, out.params, out.params.echo ? 0 : 1))
    return err;
  if (auto err = detail::check_min_tokens(out.params))
    return err;
  if (auto err = read_completion_options(*obj, out.params))
    return err;
  return out;
}

} // namespace dynamo::openai
