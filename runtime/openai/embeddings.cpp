// POST /v1/embeddings: parse, preprocess, pool and encode.
#include "runtime/openai/embeddings.hpp"

#include "runtime/core/base64.hpp"
#include "runtime/openai/json_fields.hpp"
#include "runtime/openai/preprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace dynamo::openai {

namespace {

using detail::json;

constexpr std::string_view input_types =
  "a string, an array of strings, an array of token ids or an array of arrays of token ids";

caf::error read_ids(const json& arr, const std::string& param, std::vector<uint32_t>& out) {
  if (arr.empty())
    return detail::value_error(param, "must not be an empty array.");
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& t = arr[i];
    if (!t.is_number_unsigned() || t.get<uint64_t>() > std::numeric_limits<uint32_t>::max())
      return detail::value_error(fmt::format("{}[{}]", param, i),
                                 fmt::format("token ids are integers in [0, 4294967295], got {}.", t.dump()));
    out.push_back(static_cast<uint32_t>(t.get<uint64_t>()));
  }
  return {};
}

caf::error read_text(const json& s, const std::string& param, std::vector<prompt_input>& out) {
  if (s.get_ref<const std::string&>().empty())
    return detail::value_error(param, "must not be empty.");
  out.emplace_back(s.get<std::string>());
  return {};
}

caf::error read_input(const json& obj, std::vector<prompt_input>& out) {
  const json* in = detail::field(obj, "input");
  if (!in)
    return detail::missing_error("input");
  if (in->is_string())
    return read_text(*in, "input", out);
  if (!in->is_array())
    return detail::type_error("input", input_types, *in);
  if (in->empty())
    return detail::value_error("input", "must not be an empty array.");
  if (in->size() > max_embedding_inputs)
    return detail::value_error("input", fmt::format("at most {} inputs per request, got {}.",
                                                    max_embedding_inputs, in->size()));
  if (std::all_of(in->begin(), in->end(), [](const json& e) { return e.is_number_integer(); })) {
    std::vector<uint32_t> ids;
    if (auto err = read_ids(*in, "input", ids))
      return err;
    out.emplace_back(std::move(ids));
    return {};
  }
  for (size_t i = 0; i < in->size(); ++i) {
    const json& e = (*in)[i];
    const std::string param = fmt::format("input[{}]", i);
    if (e.is_string()) {
      if (auto err = read_text(e, param, out))
        return err;
    } else if (e.is_array()) {
      std::vector<uint32_t> ids;
      if (auto err = read_ids(e, param, ids))
        return err;
      out.emplace_back(std::move(ids));
    } else {
      return detail::type_error(param, "a string or an array of token ids", e);
    }
  }
  return {};
}

caf::error read_encoding(const json& obj, embedding_encoding& out) {
  std::optional<std::string> enc;
  if (auto err = detail::read_string(obj, "encoding_format", enc))
    return err;
  if (!enc || *enc == "float")
    out = embedding_encoding::float_array;
  else if (*enc == "base64")
    out = embedding_encoding::base64;
  else
    return field_error(errc::invalid_argument, "encoding_format", codes::invalid_value,
                       fmt::format("Invalid value for 'encoding_format': expected 'float' or 'base64', got '{}'.",
                                   *enc));
  return {};
}

} // namespace

expected<embedding_request> parse_embedding_request(std::string_view body) {
  auto obj = detail::parse_object(body);
  if (!obj)
    return std::move(obj.error());
  embedding_request out;
  if (auto err = detail::read_model(*obj, out.model))
    return err;
  if (auto err = read_input(*obj, out.inputs))
    return err;
  if (auto err = read_encoding(*obj, out.encoding))
    return err;
  std::optional<int64_t> dims;
  if (auto err = detail::read_integer(*obj, "dimensions", 1, std::numeric_limits<uint32_t>::max(), dims))
    return err;
  if (dims)
    out.dimensions = static_cast<uint32_t>(*dims);
  std::optional<std::string> user;
  if (auto err = detail::read_string(*obj, "user", user))
    return err;
  return out;
}

expected<std::vector<protocol::preprocessed_request>>
preprocess_embeddings(const embedding_request& req, const protocol::model_card& card, const tok::tokenizer& tk,
                      std::string_view request_id) {
  if (card.embedding_size == 0)
    return field_error(errc::unsupported, "model", codes::unsupported_value,
                       fmt::format("The model '{}' does not serve embeddings: its workers' engine does not "
                                   "compute them.", card.name));
  if (req.dimensions && *req.dimensions != card.embedding_size)
    return field_error(errc::unsupported, "dimensions", codes::unsupported_value,
                       fmt::format("The model '{}' embeds in {} dimensions and does not support Matryoshka "
                                   "representation; other dimensions would be poor embeddings.",
                                   card.name, card.embedding_size));
  std::vector<protocol::preprocessed_request> out;
  out.reserve(req.inputs.size());
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const std::string param = req.inputs.size() == 1 ? "input" : fmt::format("input[{}]", i);
    auto r = preprocess_embedding(req.inputs[i], card, tk, fmt::format("{}-{}", request_id, i), param);
    if (!r)
      return std::move(r.error());
    out.push_back(std::move(*r));
  }
  return out;
}

std::vector<float> l2_normalized(std::vector<float> v) {
  double sum = 0.0;
  for (float x : v)
    sum += double(x) * x;
  if (sum > 0.0) {
    const double inv = 1.0 / std::sqrt(sum);
    for (float& x : v)
      x = static_cast<float>(x * inv);
  }
  return v;
}

std::string base64_floats(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) { // little-endian float32, whatever the host
    uint32_t u = 0;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b)
      bytes[i * 4 + b] = static_cast<uint8_t>(u >> (8 * b));
  }
  return base64_encode(bytes);
}

std::string embedding_body(const embedding_request& req, std::string_view model,
                           const std::vector<std::vector<float>>& hidden, uint64_t prompt_tokens) {
  auto data = nlohmann::ordered_json::array();
  for (size_t i = 0; i < hidden.size(); ++i) {
    std::vector<float> e = l2_normalized(hidden[i]);
    nlohmann::ordered_json item{{"object", "embedding"}, {"index", i}};
    if (req.encoding == embedding_encoding::base64)
      item["embedding"] = base64_floats(e);
    else
      item["embedding"] = std::move(e);
    data.push_back(std::move(item));
  }
  nlohmann::ordered_json body{{"object", "list"},
                              {"data", std::move(data)},
                              {"model", model},
                              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return detail::dump(body);
}

} // namespace dynamo::openai
