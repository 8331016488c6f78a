#include "actors/frontend/embedding_actor.hpp"

#include "actors/core/type_ids.hpp"
#include "runtime/openai/embeddings.hpp"
#include "runtime/openai/error.hpp"
#include "runtime/openai/response.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/spdlog.h>

#include <optional>
#include <vector>

namespace dynamo::frontend {

namespace {

using clock = std::chrono::steady_clock;
using actors::backend_error_atom;
using actors::client_gone_atom;

struct embedding_state {
  embedding_job job;
  std::shared_ptr<const model_entry> model;
  std::unique_ptr<metrics::request_recorder> recorder; ///< from model resolution on
  openai::embedding_request req;
  std::vector<std::shared_ptr<engine::generation>> gens; ///< one per input
  std::vector<std::vector<float>> hidden;                ///< one per input, filled as they end
  std::vector<bool> done;
  size_t num_done = 0;
  uint64_t prompt_tokens = 0;
  uint64_t cached_tokens = 0;
  std::string request_id;
  bool finished = false;

  static inline const char* name = "dynamo.embedding";

  embedding_state() = default;
  embedding_state(const embedding_state&) = delete;
  embedding_state& operator=(const embedding_state&) = delete;
  ~embedding_state() { cancel_rest(); }

  /// Cancels every input still running (however the request ended).
  void cancel_rest() {
    for (size_t i = 0; i < gens.size(); ++i)
      if (gens[i] && !done[i])
        gens[i]->cancel();
  }
};

using embedding_ptr = caf::stateful_actor<embedding_state>*;

void end(embedding_ptr self) {
  auto& st = self->state;
  st.finished = true;
  st.cancel_rest();
  if (st.recorder)
    st.recorder->finish(clock::now());
  self->quit();
}

void fail(embedding_ptr self, const caf::error& err) {
  auto& st = self->state;
  if (st.finished)
    return;
  auto api = openai::to_api_error(err);
  if (api.status >= 500)
    spdlog::error("embedding request {}: {}", st.request_id, describe(err));
  if (st.recorder)
    st.recorder->mark_error(metrics::error_type_of(code_of(err)));
  else // the model label stays "" so that client input cannot grow the label set
    st.job.ctx->metrics->count_request("", metrics::endpoint_label::embeddings, metrics::request_type::unary,
                                       metrics::error_type_of(code_of(err)));
  st.job.responder->respond(api.status, "application/json", openai::error_body(api));
  end(self);
}

void on_chunk(embedding_ptr self, uint32_t index, const protocol::engine_output& out) {
  auto& st = self->state;
  if (st.finished || index >= st.done.size() || st.done[index])
    return;
  if (out.finish == protocol::finish_reason::none)
    return; // an embed request answers in one chunk; nothing else is expected
  st.done[index] = true;
  ++st.num_done;
  if (out.finish == protocol::finish_reason::error)
    return fail(self, openai::backend_error(out));
  if (out.finish == protocol::finish_reason::cancelled)
    return fail(self, make_error(errc::closed, "the backend cancelled the request"));
  if (out.embedding.empty())
    return fail(self, make_error(errc::internal, "the backend answered an embed request without an embedding"));
  st.hidden[index] = out.embedding;
  st.cached_tokens += out.cached_tokens;
  if (st.num_done < st.done.size())
    return;
  st.recorder->observe_cached(static_cast<uint32_t>(st.cached_tokens));
  auto body = openai::embedding_body(st.req, st.model->card.name, st.hidden, st.prompt_tokens);
  st.recorder->mark_ok(); // before the client can see the answer
  st.recorder->finish(clock::now());
  st.job.responder->respond(200, "application/json", std::move(body), {{"X-Request-Id", st.request_id}});
  end(self);
}

void on_gone(embedding_ptr self) {
  auto& st = self->state;
  if (st.finished)
    return;
  if (st.recorder)
    st.recorder->mark_disconnected();
  end(self);
}

/// Parses, resolves and preprocesses, then starts every input. False when
/// the request already ended (answered with an error).
bool begin(embedding_ptr self) {
  auto& st = self->state;
  auto req = openai::parse_embedding_request(st.job.body);
  if (!req)
    return fail(self, req.error()), false;
  st.req = std::move(*req);
  st.model = st.job.ctx->models.find(st.req.model);
  if (!st.model)
    return fail(self, openai::field_error(errc::not_found, "model", openai::codes::model_not_found,
                                          "The model '" + st.req.model + "' does not exist.")),
           false;
  st.recorder = std::make_unique<metrics::request_recorder>(*st.job.ctx->metrics, st.model->card.name,
                                                            metrics::endpoint_label::embeddings,
                                                            metrics::request_type::unary, st.job.start);
  st.request_id = openai::random_hex_id();
  auto pre = openai::preprocess_embeddings(st.req, st.model->card, *st.model->tokenizer, "embd-" + st.request_id);
  if (!pre)
    return fail(self, pre.error()), false;
  for (const auto& r : *pre)
    st.prompt_tokens += r.prompt_tokens;
  st.recorder->observe_prompt(static_cast<uint32_t>(std::min<uint64_t>(st.prompt_tokens, UINT32_MAX)));
  if (st.job.responder->client_gone())
    return on_gone(self), false;
  st.job.responder->on_disconnect(
    [hdl = caf::actor_cast<caf::actor>(self)] { caf::anon_send(hdl, actors::client_gone_atom_v); });
  const size_t n = pre->size();
  st.hidden.resize(n);
  st.done.assign(n, false);
  st.gens.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // The callback holds the actor alive until it quits (CAF drops messages to a quit actor).
    auto forward = [hdl = caf::actor_cast<caf::actor>(self), i](expected<protocol::engine_output> chunk) {
      if (chunk)
        caf::anon_send(hdl, static_cast<uint32_t>(i), std::move(*chunk));
      else
        caf::anon_send(hdl, actors::backend_error_atom_v, std::move(chunk.error()));
    };
    st.gens.push_back(st.model->client->generate(std::move((*pre)[i]), std::move(forward)));
    if (!st.gens.back())
      return fail(self, make_error(errc::internal, "the llm_client returned no generation")), false;
  }
  return true;
}

caf::behavior embedding_actor(embedding_ptr self, embedding_job job) {
  self->state.job = std::move(job);
  if (!begin(self))
    return {};
  auto on_output = [self](uint32_t index, const protocol::engine_output& out) { on_chunk(self, index, out); };
  auto on_error = [self](backend_error_atom, const caf::error& err) { fail(self, err); };
  auto on_client_gone = [self](client_gone_atom) { on_gone(self); };
  const auto timeout = self->state.job.ctx->backend_timeout;
  if (timeout.count() <= 0)
    return {on_output, on_error, on_client_gone};
  // CAF restarts this timer whenever a message arrives: it measures silence.
  return {on_output, on_error, on_client_gone, caf::after(timeout) >> [self, timeout] {
            fail(self, make_error(errc::timeout, "the backend sent nothing for " +
                                                     std::to_string(timeout.count()) + " ms"));
          }};
}

} // namespace

void spawn_embedding_actor(caf::actor_system& sys, embedding_job job) { sys.spawn(embedding_actor, std::move(job)); }

} // namespace dynamo::frontend
