// One generation request (POST /v1/chat/completions, /v1/completions, and
// /v1/responses and /v1/messages translated to chat) as a
// CAF actor: parses the body, resolves the model, preprocesses, calls
// llm_client::generate (chunks come back as messages), detokenizes, applies
// stop strings, writes JSON or SSE (a stream's headers and role chunk as soon
// as the generation is started) through the http_responder, records
// metrics, and cancels the generation when the client leaves or a stop string
// matches. Spawned by frontend_service, one per request; it quits when the
// response is complete. The actor's state is touched only by the actor.
#pragma once

#include "actors/frontend/frontend_context.hpp"
#include "planes/http/responder.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace dynamo::frontend {

/// The route. responses and anthropic_messages are translations over chat
/// completions (runtime/openai/chat_dialect.hpp).
enum class endpoint_kind : uint8_t { chat_completions, completions, responses, anthropic_messages };

struct request_job {
  std::shared_ptr<frontend_context> ctx;
  endpoint_kind kind = endpoint_kind::chat_completions;
  std::string body; ///< the raw JSON body
  std::shared_ptr<http::http_responder> responder;
  std::chrono::steady_clock::time_point start; ///< handler entry (metrics)
  /// Released when the request is done (counts frontend_context::inflight).
  std::shared_ptr<void> inflight_guard;
};

/// Spawns the request's actor; safe from any thread (e.g. an HTTP io thread).
void spawn_request_actor(caf::actor_system& sys, request_job job);

} // namespace dynamo::frontend
