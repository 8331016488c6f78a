// POST /v1/embeddings: the request parser, the embed requests a worker
// computes (one per input: the prompt's forward pass, answered by the final
// hidden state of its last token) and the response body, which pools them
// (last token, L2-normalized, as vLLM pools decoder models) and encodes them
// as float arrays or base64. Called by the frontend's embedding actor.
// Pure functions; any thread (tokenizers are immutable).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/openai/request.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/protocol/model_card.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::openai {

inline constexpr size_t max_embedding_inputs = 2048; ///< OpenAI's limit on `input` entries

enum class embedding_encoding : uint8_t {
  float_array, ///< "float": JSON numbers
  base64       ///< "base64": the little-endian float32 bytes, base64 (the openai SDK's default)
};

/// {model, input, encoding_format?, dimensions?, user?}
struct embedding_request {
  std::string model;
  /// `input`: a string, an array of strings, an array of token ids or an
  /// array of arrays of token ids; one entry per embedding, in order.
  std::vector<prompt_input> inputs;
  embedding_encoding encoding = embedding_encoding::float_array;
  /// Width asked for; only the model's own is served (decoder models are not
  /// Matryoshka-trained, so a truncation would be a poor embedding, as vLLM says).
  std::optional<uint32_t> dimensions;
};

/// 400s name the field: empty inputs, more than max_embedding_inputs, an
/// unknown encoding_format, dimensions < 1, token ids outside uint32.
[[nodiscard]] expected<embedding_request> parse_embedding_request(std::string_view body);

/// One embed request per input, with ids `request_id`-`index`, tokenized as a
/// completion prompt is (the model's BOS/EOS, special-token text parsed).
/// Errors: 400 unsupported when the model computes no embeddings
/// (card.embedding_size 0) or `dimensions` is not its width; 400 for an
/// input that is empty after tokenization, as long as the context or longer,
/// or holds a token id outside the vocabulary (param "input[i]").
[[nodiscard]] expected<std::vector<protocol::preprocessed_request>>
preprocess_embeddings(const embedding_request& req, const protocol::model_card& card, const tok::tokenizer& tk,
                      std::string_view request_id);

/// `v` scaled to unit L2 norm (a zero vector stays zero).
[[nodiscard]] std::vector<float> l2_normalized(std::vector<float> v);

/// The standard base64 of `v`'s little-endian float32 bytes.
[[nodiscard]] std::string base64_floats(const std::vector<float>& v);

/// {"object":"list","data":[{"object":"embedding","index":i,"embedding":...}],
///  "model":..,"usage":{"prompt_tokens":N,"total_tokens":N}}: each hidden
/// state normalized and encoded as asked.
[[nodiscard]] std::string embedding_body(const embedding_request& req, std::string_view model,
                                         const std::vector<std::vector<float>>& hidden, uint64_t prompt_tokens);

} // namespace dynamo::openai
