// The one rule that turns a chunk a worker ended with finish_reason::error
// into an error value: its code, its message. Used by the routed client (a
// refusal ends the stream as an error) and the OpenAI boundary
// (openai::backend_error). Pure functions; any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/llm.hpp"

namespace dynamo::protocol {

/// The code of an error chunk: the worker's `error_code` when it gave one
/// (a refused prompt is context_length_exceeded or invalid_argument), else
/// errc::internal.
[[nodiscard]] errc error_code_of(const engine_output& out) noexcept;

/// The error an error chunk stands for: error_code_of(out) with the worker's
/// message ("the worker failed the request" when it sent none).
[[nodiscard]] caf::error error_of(const engine_output& out);

} // namespace dynamo::protocol
