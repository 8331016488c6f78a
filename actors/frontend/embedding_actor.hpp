// One POST /v1/embeddings request as a CAF actor: parses the body, resolves
// the model, turns each input into an embed request (runtime/openai/
// embeddings), starts them all at once through the model's llm_client (the
// engine batches them), gathers the hidden states by input and answers one
// JSON body; cancels what is left when the client leaves, an input fails or
// the backend stays silent. Spawned by frontend_service, one per request; its
// state is touched only by the actor.
#pragma once

#include "actors/frontend/frontend_context.hpp"
#include "planes/http/responder.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace dynamo::frontend {

struct embedding_job {
  std::shared_ptr<frontend_context> ctx;
  std::string body; ///< the raw JSON body
  std::shared_ptr<http::http_responder> responder;
  std::chrono::steady_clock::time_point start; ///< handler entry (metrics)
  std::shared_ptr<void> inflight_guard;        ///< released when the request is done
};

/// Spawns the request's actor; safe from any thread (e.g. an HTTP io thread).
void spawn_embedding_actor(caf::actor_system& sys, embedding_job job);

} // namespace dynamo::frontend
