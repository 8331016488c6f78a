#include "actors/frontend/request_actor.hpp"

#include "actors/core/type_ids.hpp"
#include "runtime/openai/anthropic_api.hpp"
#include "runtime/openai/error.hpp"
#include "runtime/openai/responses_api.hpp"
#include "runtime/openai/preprocess.hpp"
#include "runtime/openai/request.hpp"
#include "runtime/openai/response.hpp"
#include "runtime/openai/response_assembler.hpp"

#include <caf/actor_cast.hpp>
#include <caf/after.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/spdlog.h>

#include <optional>

namespace dynamo::frontend {

namespace {

using clock = std::chrono::steady_clock;
using actors::backend_error_atom;
using actors::client_gone_atom;

struct request_state {
  request_job job;
  std::shared_ptr<const model_entry> model;
  std::unique_ptr<metrics::request_recorder> recorder; ///< from model resolution on
  std::shared_ptr<engine::generation> gen;
  std::optional<openai::response_assembler> response; ///< the choices, from preprocessing on
  /// Responses / Anthropic: translates the chat output; null for chat and completions.
  std::unique_ptr<openai::chat_dialect> dialect;
  metrics::endpoint_label label = metrics::endpoint_label::chat_completions;
  openai::response_meta meta;
  openai::chat_parsing parsing; ///< chat: how the output is parsed (from preprocessing)
  std::string request_id;
  bool chat = true;
  bool stream = false;
  bool started = false;      ///< SSE headers sent
  bool finished = false;     ///< response complete (or abandoned): ignore everything
  bool backend_done = false; ///< the generation ended on its own
  bool cached_seen = false;

  static inline const char* name = "dynamo.request";

  request_state() = default;
  request_state(const request_state&) = delete;
  request_state& operator=(const request_state&) = delete;
  ~request_state() {
    if (gen && !backend_done)
      gen->cancel(); // however the actor ended, never leave a generation running
  }
};

using request_ptr = caf::stateful_actor<request_state>*;

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

std::vector<http::header_field> id_header(const request_state& st) {
  if (st.request_id.empty())
    return {};
  return {{"X-Request-Id", st.request_id}};
}

void end(request_ptr self) {
  auto& st = self->state;
  st.finished = true;
  if (st.recorder)
    st.recorder->finish(clock::now());
  self->quit();
}

void log_failure(const request_state& st, const caf::error& err, unsigned status) {
  if (status >= 500)
    spdlog::error("request {} ({}): {}", st.request_id, st.meta.model, describe(err));
  else
    spdlog::debug("request {}: rejected: {}", st.request_id, describe(err));
}

/// The error envelope of the request's API (Anthropic's differs from OpenAI's).
std::string error_body(const request_state& st, const openai::api_error& api) {
  if (st.dialect)
    return st.dialect->error_body(api);
  if (st.job.kind == endpoint_kind::anthropic_messages)
    return openai::anthropic_error_body(api);
  return openai::error_body(api);
}

/// Ends the request with `err`: an HTTP error before the stream started, an
/// SSE `event: error` (and no [DONE]) after.
void fail(request_ptr self, const caf::error& err) {
  auto& st = self->state;
  if (st.finished)
    return;
  auto api = openai::to_api_error(err);
  log_failure(st, err, api.status);
  if (st.recorder) { // recorded before the client can see the error
    st.recorder->mark_error(metrics::error_type_of(code_of(err)));
    st.recorder->finish(clock::now());
  }
  auto& res = *st.job.responder;
  if (!st.started) {
    res.respond(api.status, "application/json", error_body(st, api), id_header(st));
  } else if (st.dialect) {
    auto ev = st.dialect->stream_error(api);
    res.send_event(ev.data, ev.event);
    res.finish();
  } else {
    res.send_event(openai::error_body(api), "error");
    res.finish();
  }
  end(self);
}

/// Fails a request that never reached a model (bad body, unknown model).
void reject(request_ptr self, const caf::error& err, metrics::request_type rt) {
  auto& st = self->state;
  auto ep = st.label;
  // The model label stays "" so that client input cannot grow the label set.
  st.job.ctx->metrics->count_request("", ep, rt, metrics::error_type_of(code_of(err)));
  fail(self, err);
}

void on_gone(request_ptr self) {
  auto& st = self->state;
  if (st.finished)
    return;
  spdlog::debug("request {}: client went away, cancelling", st.request_id);
  if (st.gen)
    st.gen->cancel();
  if (st.recorder)
    st.recorder->mark_disconnected();
  end(self);
}

bool send_raw(request_ptr self, std::string_view data, std::string_view event = {}) {
  if (self->state.job.responder->send_event(data, event))
    return true;
  on_gone(self);
  return false;
}

bool send_all(request_ptr self, const std::vector<openai::sse_event>& events) {
  for (const auto& ev : events)
    if (!send_raw(self, ev.data, ev.event))
      return false;
  return true;
}

/// One chat payload: as it is, or through the request's dialect.
bool send(request_ptr self, std::string_view data) {
  auto& st = self->state;
  if (st.dialect)
    return send_all(self, st.dialect->push(data));
  return send_raw(self, data);
}

bool start_sse(request_ptr self) {
  auto& st = self->state;
  st.started = true;
  if (!st.job.responder->start_stream(id_header(st))) {
    on_gone(self);
    return false;
  }
  for (const std::string& event : st.response->opening())
    if (!send(self, event))
      return false;
  return true;
}

/// Records the request as a success. Called before the last bytes go out, so
/// that a client that saw the end of its response also sees it in /metrics.
void record_success(request_state& st) {
  st.recorder->mark_ok();
  st.recorder->finish(clock::now());
}

/// Every choice is complete: the body, or the stream's closing payloads.
void complete(request_ptr self) {
  auto& st = self->state;
  auto& res = *st.job.responder;
  if (!st.stream) {
    auto body = st.response->body();
    if (st.dialect) {
      auto translated = st.dialect->body(body);
      if (!translated)
        return fail(self, translated.error());
      body = std::move(*translated);
    }
    record_success(st);
    res.respond(200, "application/json", std::move(body), id_header(st));
    return end(self);
  }
  for (const std::string& event : st.response->closing())
    if (!send(self, event))
      return;
  record_success(st);
  if (st.dialect) {
    if (!send_all(self, st.dialect->finish()))
      return;
  } else {
    res.send_event("[DONE]");
  }
  res.finish();
  end(self);
}

void on_chunk(request_ptr self, const protocol::engine_output& out) {
  auto& st = self->state;
  if (st.finished)
    return;
  if (out.finish != protocol::finish_reason::none)
    st.backend_done = true;
  if (out.finish == protocol::finish_reason::error)
    return fail(self, openai::backend_error(out));
  if (out.finish == protocol::finish_reason::cancelled)
    return fail(self, make_error(errc::closed, "the backend cancelled the generation"));
  if (!std::exchange(st.cached_seen, true))
    st.recorder->observe_cached(out.cached_tokens);
  auto step = st.response->push(out);
  if (!step)
    return fail(self, step.error());
  st.recorder->observe_tokens(step->tokens, clock::now());
  if (step->cancel_backend && st.gen)
    st.gen->cancel(); // stop strings ended every choice: the rest is not wanted
  if (st.stream) {
    if (!st.started && !start_sse(self))
      return;
    for (const std::string& event : step->events)
      if (!send(self, event))
        return;
  }
  if (step->done)
    complete(self);
}

/// A strong handle for callbacks. CAF destroys an actor that nobody holds, so
/// the backend callback and the disconnect callback keep the request actor
/// alive until it quits (its state, which holds both, is destroyed on quit).
caf::actor handle_of(request_ptr self) { return caf::actor_cast<caf::actor>(self); }

/// The llm_client callback: forwards each chunk into the actor's mailbox
/// (messages to an actor that already quit are dropped).
engine::chunk_callback forward_to(request_ptr self) {
  return [hdl = handle_of(self)](expected<protocol::engine_output> chunk) {
    if (chunk)
      caf::anon_send(hdl, std::move(*chunk));
    else
      caf::anon_send(hdl, actors::backend_error_atom_v, std::move(chunk.error()));
  };
}

expected<openai::chat_request> parse(std::string_view body, openai::chat_request*) {
  return openai::parse_chat_request(body);
}
expected<openai::completion_request> parse(std::string_view body, openai::completion_request*) {
  return openai::parse_completion_request(body);
}

expected<protocol::preprocessed_request> preprocess(const openai::chat_request& r,
                                                    const model_entry& m, std::string id,
                                                    openai::chat_parsing* parsing) {
  return openai::preprocess_chat(r, m.card, *m.tokenizer, *m.chat_template, std::move(id), m.output,
                                 parsing);
}
expected<protocol::preprocessed_request> preprocess(const openai::completion_request& r,
                                                    const model_entry& m, std::string id,
                                                    openai::chat_parsing*) {
  return openai::preprocess_completion(r, m.card, *m.tokenizer, std::move(id));
}

std::optional<openai::response_assembler::options::echo_prompt>
echo_of(const openai::chat_request&, const protocol::preprocessed_request&) {
  return std::nullopt;
}
std::optional<openai::response_assembler::options::echo_prompt>
echo_of(const openai::completion_request& r, const protocol::preprocessed_request& pre) {
  return openai::echo_prompt_of(r, pre);
}

/// Responses / Anthropic: the request becomes a chat body (st.job.body) and
/// the dialect that translates the answer back. False when it was rejected.
bool translate(request_ptr self) {
  auto& st = self->state;
  expected<openai::dialect_request> tr = make_error(errc::internal, "no translation");
  if (st.job.kind == endpoint_kind::responses)
    tr = openai::translate_responses_request(st.job.body);
  else if (st.job.kind == endpoint_kind::anthropic_messages)
    tr = openai::translate_anthropic_request(st.job.body);
  else
    return true;
  if (!tr) {
    reject(self, tr.error(), metrics::request_type::unary);
    return false;
  }
  st.job.body = std::move(tr->chat_body);
  st.dialect = std::move(tr->dialect);
  return true;
}

template <class Req>
void begin(request_ptr self) {
  auto& st = self->state;
  if (!translate(self))
    return;
  auto req = parse(st.job.body, static_cast<Req*>(nullptr));
  if (!req)
    return reject(self, req.error(), metrics::request_type::unary);
  const auto rt = req->params.stream ? metrics::request_type::stream : metrics::request_type::unary;
  st.model = st.job.ctx->models.find(req->model);
  if (!st.model)
    return reject(self, openai::field_error(errc::not_found, "model", openai::codes::model_not_found,
                                            "The model '" + req->model + "' does not exist."),
                  rt);
  st.recorder = std::make_unique<metrics::request_recorder>(*st.job.ctx->metrics,
                                                            st.model->card.name, st.label, rt,
                                                            st.job.start);
  st.stream = req->params.stream;
  st.request_id = openai::random_hex_id();
  st.meta = {(st.chat ? "chatcmpl-" : "cmpl-") + st.request_id, unix_now(), st.model->card.name};
  auto pre = preprocess(*req, *st.model, st.request_id, &st.parsing);
  if (!pre)
    return fail(self, pre.error());
  st.recorder->observe_prompt(pre->prompt_tokens);
  st.response.emplace(*st.model->tokenizer, st.meta,
                      openai::response_assembler::options{
                        .chat = st.chat,
                        .stream = st.stream,
                        .include_usage = req->params.include_usage,
                        .n = pre->sampling.n,
                        .logprobs = pre->sampling.logprobs.has_value(),
                        .stop = std::move(req->params.stop),
                        .stop_token_ids = pre->stop.stop_token_ids,
                        .prompt_tokens = pre->prompt_tokens,
                        .include_special = st.parsing.include_special,
                        .parse = st.parsing.parser,
                        .echo = echo_of(*req, *pre)});
  if (st.job.responder->client_gone())
    return on_gone(self);
  st.job.responder->on_disconnect(
    [hdl = handle_of(self)] { caf::anon_send(hdl, actors::client_gone_atom_v); });
  st.gen = st.model->client->generate(std::move(*pre), forward_to(self));
  if (!st.gen)
    return fail(self, make_error(errc::internal, "the llm_client returned no generation"));
  // Accepted: a stream's headers and role chunk go out now, not with the first
  // token, so the client sees at once that its request runs (and can leave).
  // Backend errors from here on are SSE `event: error`s.
  if (st.stream)
    (void)start_sse(self);
}

/// The backend sent nothing for backend_timeout: give up (the state's
/// destructor cancels the generation).
void on_silence(request_ptr self) {
  auto ms = self->state.job.ctx->backend_timeout.count();
  fail(self, make_error(errc::timeout, "the backend sent nothing for " + std::to_string(ms) + " ms"));
}

metrics::endpoint_label label_of(endpoint_kind k) {
  switch (k) {
    case endpoint_kind::chat_completions: return metrics::endpoint_label::chat_completions;
    case endpoint_kind::completions: return metrics::endpoint_label::completions;
    case endpoint_kind::responses: return metrics::endpoint_label::responses;
    case endpoint_kind::anthropic_messages: return metrics::endpoint_label::anthropic_messages;
  }
  return metrics::endpoint_label::chat_completions;
}

caf::behavior request_actor(request_ptr self, request_job job) {
  self->state.job = std::move(job);
  self->state.chat = self->state.job.kind != endpoint_kind::completions;
  self->state.label = label_of(self->state.job.kind);
  if (self->state.chat)
    begin<openai::chat_request>(self);
  else
    begin<openai::completion_request>(self);
  if (self->state.finished)
    return {};
  auto on_output = [self](const protocol::engine_output& out) { on_chunk(self, out); };
  auto on_error = [self](backend_error_atom, const caf::error& err) {
    self->state.backend_done = true;
    fail(self, err);
  };
  auto on_client_gone = [self](client_gone_atom) { on_gone(self); };
  const auto timeout = self->state.job.ctx->backend_timeout;
  if (timeout.count() <= 0)
    return {on_output, on_error, on_client_gone};
  // CAF restarts this timer whenever a message arrives: it measures silence.
  return {on_output, on_error, on_client_gone, caf::after(timeout) >> [self] { on_silence(self); }};
}

} // namespace

void spawn_request_actor(caf::actor_system& sys, request_job job) {
  sys.spawn(request_actor, std::move(job));
}

} // namespace dynamo::frontend
