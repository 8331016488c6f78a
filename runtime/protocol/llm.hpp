// The token-level protocol between frontend, router and workers (Dynamo's
// PreprocessedRequest / LLMEngineOutput): what travels on the request plane.
// Plain values with msgpack map encodings, so fields can be added without
// breaking older peers. Decode with runtime/protocol/codec.hpp.
#pragma once

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::protocol {

/// Why a sequence ended. `stop`: EOS/EOT, a stop token or a stop string;
/// `length`: max_tokens or the context limit.
enum class finish_reason : uint8_t { none = 0, stop = 1, length = 2, cancelled = 3, error = 4 };

[[nodiscard]] std::string_view to_string(finish_reason r) noexcept;

/// Bounds a worker enforces on what it is asked (the frontend's limits, see
/// runtime/openai/request.hpp, are within them).
inline constexpr uint32_t max_top_logprobs = 20;    ///< OpenAI's top_logprobs maximum
inline constexpr size_t max_logit_bias = 1024;      ///< logit_bias entries per request

/// One logit_bias entry: `bias` is added to the logit of `token`.
struct token_bias {
  uint32_t token = 0;
  float bias = 0.0f; ///< [-100, 100]
  DYNAMO_MSGPACK_MAP(token, bias);
};

/// What kind of constraint guides decoding (structured outputs, forced tool
/// calls). The worker compiles the spec into a grammar (runtime/grammar) and
/// masks every token the grammar does not allow before sampling.
enum class guided_kind : uint8_t {
  none = 0,
  json_object = 1, ///< any JSON object (response_format json_object); spec empty
  json_schema = 2, ///< spec: the JSON Schema text (response_format json_schema, strict)
  regex = 3,       ///< spec: the pattern (nvext guided_regex)
  choice = 4,      ///< spec: a JSON array of strings (nvext guided_choice)
  grammar = 5,     ///< spec: llama.cpp GBNF text (nvext guided_grammar)
  /// spec: JSON {"functions": [{"name": s, "parameters": schema}, ...],
  ///   "begin": s, "end": s,        text around each call (or around the array)
  ///   "separator": s,              between calls when not an array
  ///   "max_calls": n,              1, or 0 for no limit (parallel_tool_calls)
  ///   "array": bool,               calls as one JSON array (Llama 3, Mistral)
  ///   "arguments_key": s}          "arguments" (Hermes, Mistral) or "parameters" (Llama 3)
  /// Each call is {"name": <one of the names>, <arguments_key>: <its schema>}.
  tool_calls = 6,
};

struct guided_decoding {
  guided_kind kind = guided_kind::none;
  std::string spec;
  DYNAMO_MSGPACK_MAP(kind, spec);
};

/// How the next token is drawn (vLLM's SamplingParams semantics). The logits
/// are processed in this order: logit_bias, min_tokens (stop tokens masked
/// out until min_tokens), repetition_penalty, then frequency/presence
/// penalties; then temperature; then min_p, top_k and top_p truncate.
struct sampling_options {
  float temperature = 1.0f;     ///< 0 means greedy
  float top_p = 1.0f;           ///< nucleus mass in (0, 1]
  int32_t top_k = 0;            ///< 0 means off
  /// Per-request RNG seed; token i uses (seed, position i). With n > 1,
  /// choice c draws from seed + c (as vLLM), so choice 0 is the n = 1 output.
  std::optional<uint64_t> seed;
  float min_p = 0.0f;              ///< [0, 1]: drop tokens below min_p x the top probability
  float presence_penalty = 0.0f;   ///< [-2, 2]: minus this once for every token generated before
  float frequency_penalty = 0.0f;  ///< [-2, 2]: minus this times the token's generated count
  float repetition_penalty = 1.0f; ///< > 0: logits of prompt and generated tokens / (or x, if <= 0) it
  std::vector<token_bias> logit_bias; ///< unique tokens, at most max_logit_bias
  /// Report the chosen token's log-probability and this many alternatives
  /// (<= max_top_logprobs) for every generated token; nullopt: none.
  std::optional<uint32_t> logprobs;
  /// Choices to generate. The prompt is computed once; its KV blocks are
  /// shared by all choices. A request with n > 1 is one routed request.
  uint32_t n = 1;
  /// Grammar-constrained decoding (none: unconstrained). The mask is applied
  /// before logit_bias, so a biased token can never escape the grammar.
  guided_decoding guided;
  /// Report the logprob of every prompt token after the first under the
  /// model's raw distribution at the position before it (log-softmax of the
  /// unedited logits, temperature 1) and this many alternatives
  /// (<= max_top_logprobs): engine_output::prompt_logprobs, with the first
  /// chunk. The whole prompt is computed (no prefix-cache hit); n must be 1;
  /// never disaggregated. nullopt: none (vLLM's prompt_logprobs).
  std::optional<uint32_t> prompt_logprobs;
  DYNAMO_MSGPACK_MAP(temperature, top_p, top_k, seed, min_p, presence_penalty, frequency_penalty,
                     repetition_penalty, logit_bias, logprobs, n, guided, prompt_logprobs);
};

struct stop_conditions {
  uint32_t max_tokens = 16;             ///< new tokens to generate (after migration: remaining)
  /// Stop tokens are masked out of sampling (and never end the sequence)
  /// until this many tokens have been generated.
  uint32_t min_tokens = 0;
  /// Every id that ends generation: the model's EOS/EOT/EOG ids (unless
  /// ignore_eos) and the client's stop_token_ids, as the frontend resolved them.
  std::vector<uint32_t> stop_token_ids;
  bool ignore_eos = false; ///< informational: stop_token_ids already leaves EOS out
  // Stop *strings* are matched by the frontend on detokenized text.
  DYNAMO_MSGPACK_MAP(max_tokens, min_tokens, stop_token_ids, ignore_eos);
};

/// One generation request as a worker sees it.
struct preprocessed_request {
  std::string request_id;
  std::string model;
  std::vector<uint32_t> token_ids; ///< prompt; after a migration, prompt + output so far
  sampling_options sampling;
  stop_conditions stop;
  uint32_t prompt_tokens = 0;      ///< length of the original prompt (<= token_ids.size())
  std::optional<uint64_t> backend_instance_id; ///< pinned worker, bypasses routing
  std::vector<uint8_t> disagg;     ///< opaque prefill/decode hand-off parameters (empty = aggregated)
  /// An embedding request (/v1/embeddings): the worker computes the prompt and
  /// answers one chunk with the final hidden state of its last token
  /// (engine_output::embedding) instead of generating; sampling and stop
  /// are ignored, n must be 1, it is never disaggregated.
  bool embed = false;
  DYNAMO_MSGPACK_MAP(request_id, model, token_ids, sampling, stop, prompt_tokens,
                     backend_instance_id, disagg, embed);
};

/// One alternative of a token's logprobs.
struct top_logprob {
  uint32_t token = 0;
  float logprob = 0.0f;
  DYNAMO_MSGPACK_MAP(token, logprob);
};

/// The log-probability of one generated token under the distribution it was
/// sampled from (after logit_bias, penalties and temperature; before
/// top-k/top-p/min-p truncation; temperature 0: the unscaled processed
/// logits), and the `logprobs` most likely tokens of that distribution, most
/// likely first (ties: lower id first). -inf for a masked-out token.
struct token_logprob {
  float logprob = 0.0f;
  std::vector<top_logprob> top;
  DYNAMO_MSGPACK_MAP(logprob, top);
};

/// One chunk of a response stream. A stream ends with a chunk whose `finish`
/// is not `none`. With n > 1 every chunk belongs to one choice (`index`); a
/// choice that ends while others go on says so in `choice_finish`, and the
/// last choice to end carries the stream's `finish`.
struct engine_output {
  std::vector<uint32_t> token_ids; ///< new tokens in this chunk (may be empty)
  finish_reason finish = finish_reason::none;
  uint32_t cached_tokens = 0;      ///< prompt tokens served from the prefix cache (first chunk)
  std::string error;               ///< set when finish == error
  std::vector<uint8_t> disagg;     ///< prefill result for a decode worker (disaggregation)
  uint8_t error_code = 0;          ///< dynamo::errc value when finish == error (0: unknown)
  /// Aligned with token_ids when the request asked for logprobs, else empty.
  std::vector<token_logprob> logprobs;
  uint32_t index = 0; ///< the choice (0 .. n-1) these tokens belong to
  finish_reason choice_finish = finish_reason::none; ///< choice `index` ended; the stream goes on
  /// An embed request's answer (its only chunk, finish stop): the final-norm
  /// hidden state of the prompt's last token, as the model computed it (not
  /// normalized; the frontend pools and normalizes).
  std::vector<float> embedding;
  /// A decode request's first chunk: the prefill result it came with was not
  /// used (refused, or its KV transfer failed) and the prompt was prefilled
  /// here, so the router counts a local fallback rather than a remote prefill.
  bool prefilled_locally = false;
  /// The first chunk of a request with sampling.prompt_logprobs: one entry
  /// per prompt token from the second on (the first has no distribution),
  /// the original prompt only (not tokens generated before a migration).
  std::vector<token_logprob> prompt_logprobs;
  DYNAMO_MSGPACK_MAP(token_ids, finish, cached_tokens, error, disagg, error_code, logprobs, index,
                     choice_finish, embedding, prefilled_locally, prompt_logprobs);

  /// How this chunk ends its choice: `finish`, else `choice_finish` (none: it goes on).
  [[nodiscard]] finish_reason choice_end() const noexcept {
    return finish != finish_reason::none ? finish : choice_finish;
  }
};

} // namespace dynamo::protocol

MSGPACK_ADD_ENUM(dynamo::protocol::finish_reason);
MSGPACK_ADD_ENUM(dynamo::protocol::guided_kind);
