// When a sequence ends: the stop rules applied after each sampled token
// (stop token ids, min_tokens, max_tokens, context length). ignore_eos is the
// frontend's business: it leaves EOS out of stop_token_ids.
// Called by the scheduler's update(). Pure function; safe from any thread.
#pragma once

#include "runtime/protocol/llm.hpp"

#include <cstdint>

namespace dynamo::engine {

/// Why a sequence ends after `token` was appended, or finish_reason::none.
///  - `stop`: `token` is one of stop.stop_token_ids and at least
///    stop.min_tokens tokens have been generated (`num_output`, counting
///    `token`); a stop token before min_tokens is an ordinary token;
///  - `length`: num_output reached stop.max_tokens, or the sequence
///    (`num_tokens`, prompt + output) reached `max_model_len`.
/// A stop token wins over length when both apply.
[[nodiscard]] protocol::finish_reason check_stop(uint32_t token, uint32_t num_output,
                                                 uint32_t num_tokens,
                                                 const protocol::stop_conditions& stop,
                                                 uint32_t max_model_len) noexcept;

} // namespace dynamo::engine
