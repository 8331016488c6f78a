// The OpenAI side of dynamo-bench, shared by its load generator and its
// cancel-storm mode: the served model, synthetic request bodies and what each
// SSE event of a streamed response says. Any thread (resolve_model blocks).
#pragma once

#include "apps/dynamo-bench/load_generator.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/bench/sse_parser.hpp"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::bench {

/// The first model of GET /v1/models.
[[nodiscard]] expected<std::string> resolve_model(http::http_client& client);

/// A streaming request for cfg.endpoint: `isl` random token ids (completions)
/// or words (chat) drawn from `rng`, so that prompts differ from their first
/// KV block on and the prefix cache cannot hide prefill; max_tokens `osl` with
/// ignore_eos, temperature 0, include_usage.
[[nodiscard]] std::string make_body(const load_config& cfg, uint32_t isl, uint32_t osl,
                                    std::mt19937_64& rng);

/// A streaming completions request for these prompt token ids, otherwise as
/// make_body's.
[[nodiscard]] std::string make_body(const load_config& cfg, const std::vector<uint32_t>& prompt, uint32_t osl);

/// "/v1/chat/completions" or "/v1/completions".
[[nodiscard]] std::string_view target_of(const load_config& cfg) noexcept;

/// What one SSE event of a streamed response carries.
struct stream_event {
  bool done = false;                         ///< data: [DONE]
  std::string error;                         ///< an `event: error`, else ""
  uint64_t content_tokens = 0;               ///< 1 when it carries text, else 0
  std::optional<uint64_t> completion_tokens; ///< from a usage object
};
[[nodiscard]] stream_event read_event(const sse_event& ev);

} // namespace dynamo::bench
