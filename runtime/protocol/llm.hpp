// The token-level protocol between frontend, router and workers (Dynamo's
// PreprocessedRequest / LLMEngineOutput): what travels on the request plane.
// Plain values with msgpack map encodings, so fields can be added without
// breaking older peers. Decode with runtime/protocol/codec.hpp.
#pragma once

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

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

struct sampling_options {
  float temperature = 1.0f;     ///< 0 means greedy
  float top_p = 1.0f;           ///< nucleus mass in (0, 1]
  int32_t top_k = 0;            ///< 0 means off
  std::optional<uint64_t> seed; ///< per-request RNG seed; token i uses (seed, position i)
  DYNAMO_MSGPACK_MAP(temperature, top_p, top_k, seed);
};

struct stop_conditions {
  uint32_t max_tokens = 16;             ///< new tokens to generate (after migration: remaining)
  uint32_t min_tokens = 0;              ///< EOS is ignored before this many tokens
  std::vector<uint32_t> stop_token_ids; ///< EOS/EOT/EOG ids; generation ends on any of them
  bool ignore_eos = false;
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
  DYNAMO_MSGPACK_MAP(request_id, model, token_ids, sampling, stop, prompt_tokens,
                     backend_instance_id, disagg);
};

/// One chunk of a response stream. A stream ends with a chunk whose `finish`
/// is not `none`.
struct engine_output {
  std::vector<uint32_t> token_ids; ///< new tokens in this chunk (may be empty)
  finish_reason finish = finish_reason::none;
  uint32_t cached_tokens = 0;      ///< prompt tokens served from the prefix cache (first chunk)
  std::string error;               ///< set when finish == error
  std::vector<uint8_t> disagg;     ///< prefill result for a decode worker (disaggregation)
  uint8_t error_code = 0;          ///< dynamo::errc value when finish == error (0: unknown)
  DYNAMO_MSGPACK_MAP(token_ids, finish, cached_tokens, error, disagg, error_code);
};

} // namespace dynamo::protocol

MSGPACK_ADD_ENUM(dynamo::protocol::finish_reason);
