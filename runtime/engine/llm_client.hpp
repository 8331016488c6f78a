// How the frontend asks for tokens without knowing who makes them: a local
// engine, a router in front of workers, or a test fake. `generate` returns at
// once; chunks arrive on the callback from some other thread, in order, and
// the last one has finish != none (or is an error). Implementations are
// thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/llm.hpp"

#include <functional>
#include <memory>

namespace dynamo::engine {

/// Handle to one in-flight generation. Dropping it does not cancel.
class generation {
public:
  virtual ~generation() = default;
  /// Stops generation (client went away, stop string hit). Idempotent; after
  /// it the callback may still receive one final chunk.
  virtual void cancel() = 0;
};

/// Receives each chunk; an error value ends the stream.
using chunk_callback = std::function<void(expected<protocol::engine_output>)>;

class llm_client {
public:
  virtual ~llm_client() = default;
  [[nodiscard]] virtual std::shared_ptr<generation> generate(protocol::preprocessed_request req,
                                                             chunk_callback on_chunk) = 0;
};

} // namespace dynamo::engine
