// The prefill-first flow of disaggregated serving (research/dynamo.md 4.1, 4.3)
// as pure decisions and request rewrites: whether a request is prefilled on a
// prefill worker (conditional disaggregation), its prefill leg, the prefill
// result in that leg's last chunk, and its decode leg's parameters. Called by
// actors/router/routed_client (the orchestration: routing, fallbacks, metrics).
// Pure functions; safe from any thread.
#pragma once

#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/llm.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace dynamo::disagg {

/// Suffix of a prefill leg's request id.
inline constexpr std::string_view prefill_request_suffix = "-prefill";

/// Before asking the decode router about its cache: can `r` be prefilled
/// remotely at all? Needs a prefill instance, a request that is not itself a
/// leg (no disagg bytes), one choice (a prefill result carries one first
/// token), not an embedding (it is a prefill already: it runs where it is
/// routed), no prompt logprobs (the worker that computes the prompt reports
/// them: served aggregated) and a prompt of at least `max_local_prefill_length` tokens.
[[nodiscard]] bool may_prefill_remotely(const protocol::preprocessed_request& r, int prefill_instances,
                                        uint32_t max_local_prefill_length) noexcept;

/// Once the decode router says how many prompt tokens a decode worker caches:
/// remote when at least `max_local_prefill_length` tokens are left to compute.
[[nodiscard]] bool prefill_remotely(size_t prompt_tokens, size_t cached_tokens,
                                    uint32_t max_local_prefill_length) noexcept;

/// The prefill leg: id + prefill_request_suffix, max_tokens 1, min_tokens 0, role prefill.
[[nodiscard]] protocol::preprocessed_request prefill_request(const protocol::preprocessed_request& original);

/// The prefill result a prefill leg's final chunk carries; nullopt for any
/// other chunk or bytes that do not decode.
[[nodiscard]] std::optional<protocol::kv_prefill_result> prefill_result_of(const protocol::engine_output& chunk);

/// The decode leg's disagg bytes: role decode with `result`.
[[nodiscard]] std::vector<uint8_t> decode_params(protocol::kv_prefill_result result);

} // namespace dynamo::disagg
