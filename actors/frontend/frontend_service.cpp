#include "actors/frontend/frontend_service.hpp"

#include "actors/frontend/embedding_actor.hpp"
#include "actors/frontend/request_actor.hpp"
#include "runtime/openai/anthropic_api.hpp"
#include "runtime/openai/error.hpp"
#include "runtime/openai/openapi.hpp"
#include "runtime/openai/output_format.hpp"
#include "runtime/openai/request.hpp"
#include "runtime/openai/response.hpp"
#include "runtime/openai/tokenize.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <thread>

namespace dynamo::frontend {

namespace {

constexpr std::string_view json_type = "application/json";
constexpr std::string_view models_prefix = "/v1/models/";

std::string health_body(const model_registry& models, bool& healthy) {
  auto list = models.list();
  healthy = !list.empty();
  auto names = nlohmann::ordered_json::array();
  for (const auto& m : list)
    names.push_back(m->card.name);
  nlohmann::ordered_json j{{"status", healthy ? "healthy" : "unhealthy"}, {"models", names}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

openai::model_info info_of(const model_entry& m) { return {m.card.name, m.created, "dynamo"}; }

void respond_error(http::http_responder& res, const caf::error& err) {
  auto api = openai::to_api_error(err);
  res.respond(api.status, std::string{json_type}, openai::error_body(api));
}

/// 415 unless the body is declared JSON; true when it answered (in
/// Anthropic's envelope on its routes).
bool reject_non_json(const http::request& req, http::http_responder& res, bool anthropic = false) {
  if (http::is_json_media_type(req.header("content-type")))
    return false;
  auto got = req.header("content-type");
  auto msg = "Expected request with `Content-Type: application/json`, got " +
             (got.empty() ? std::string{"none"} : "`" + std::string{got} + "`");
  res.respond(415, std::string{json_type},
              anthropic ? openai::anthropic_error_body({415, "", msg, "", ""})
                        : openai::status_error_body(415, msg));
  return true;
}

/// 503 while the server drains; true when it answered (in Anthropic's
/// envelope on its routes).
bool reject_draining(const frontend_context& ctx, http::http_responder& res, bool anthropic = false) {
  if (!ctx.draining.load())
    return false;
  auto err = openai::to_api_error(make_error(errc::closed, "the server is shutting down"));
  res.respond(err.status, std::string{json_type},
              anthropic ? openai::anthropic_error_body(err) : openai::error_body(err));
  return true;
}

/// Counts a request in frontend_context::inflight until the guard is released.
std::shared_ptr<void> inflight_guard(const std::shared_ptr<frontend_context>& ctx) {
  ctx->inflight.fetch_add(1);
  return {nullptr, [ctx](void*) { ctx->inflight.fetch_sub(1); }};
}

/// Runs `work` in a short-lived actor, off the HTTP io thread (tokenizing a
/// long prompt must not stall other connections).
template <class F>
void run_off_io(caf::actor_system& sys, F work) {
  sys.spawn([work = std::move(work)](caf::event_based_actor* self) mutable {
    work();
    self->quit();
  });
}

/// The model a tokenizer request names, or a 404 error.
expected<std::shared_ptr<const model_entry>> find_model(const model_registry& models,
                                                        const std::string& name) {
  if (auto m = models.find(name))
    return m;
  return openai::field_error(errc::not_found, "model", openai::codes::model_not_found,
                             "The model '" + name + "' does not exist.");
}

/// POST /tokenize or /detokenize: parse, find the model, answer; counted in
/// dynamo_frontend_requests_total like the generation endpoints.
template <class Parse, class Answer>
void serve_tokenizer(frontend_context& ctx, metrics::endpoint_label ep, const std::string& body,
                     http::http_responder& res, Parse parse, Answer answer) {
  auto out = [&]() -> expected<std::pair<std::string, std::string>> {
    auto req = parse(body);
    if (!req)
      return std::move(req.error());
    auto m = find_model(ctx.models, req->model);
    if (!m)
      return std::move(m.error());
    auto text = answer(*req, **m);
    if (!text)
      return std::move(text.error());
    return std::pair{(*m)->card.name, std::move(*text)};
  }();
  if (!out) {
    ctx.metrics->count_request("", ep, metrics::request_type::unary,
                               metrics::error_type_of(code_of(out.error())));
    return respond_error(res, out.error());
  }
  ctx.metrics->count_request(out->first, ep, metrics::request_type::unary, metrics::error_type::none);
  res.respond(200, std::string{json_type}, std::move(out->second));
}

} // namespace

frontend_service::frontend_service(caf::actor_system& sys, std::shared_ptr<frontend_context> ctx)
  : sys_(sys), ctx_(std::move(ctx)) {}

frontend_service::~frontend_service() { stop(); }

expected<std::unique_ptr<frontend_service>> frontend_service::start(caf::actor_system& sys,
                                                                    frontend_options opts) {
  auto ctx = std::make_shared<frontend_context>();
  auto m = metrics::frontend_metrics::create(ctx->registry, opts.metrics);
  if (!m)
    return std::move(m.error());
  ctx->metrics = std::move(*m);
  ctx->backend_timeout = opts.backend_timeout;
  if (auto ok = openai::apply_overrides({}, opts.tool_call_parser, opts.reasoning_parser); !ok)
    return std::move(ok.error());
  ctx->tool_call_parser = opts.tool_call_parser;
  ctx->reasoning_parser = opts.reasoning_parser;
  std::unique_ptr<frontend_service> svc{new frontend_service(sys, std::move(ctx))};
  opts.http.error_body = [](unsigned status, std::string_view message) {
    return openai::status_error_body(status, message);
  };
  auto srv = http::server::start(std::move(opts.http), svc->make_routes(opts.anthropic_api));
  if (!srv)
    return std::move(srv.error());
  svc->server_ = std::move(*srv);
  return svc;
}

http::router frontend_service::make_routes(bool anthropic_api) {
  http::router r;
  auto generate = [this](endpoint_kind kind) {
    return [this, kind](http::request req, std::shared_ptr<http::http_responder> res) {
      const bool anthropic = kind == endpoint_kind::anthropic_messages;
      if (reject_draining(*ctx_, *res, anthropic) || reject_non_json(req, *res, anthropic))
        return;
      // Parsing and tokenizing happen in the request actor, off the io thread.
      spawn_request_actor(sys_, request_job{ctx_, kind, std::move(req.body), std::move(res),
                                            std::chrono::steady_clock::now(), inflight_guard(ctx_)});
    };
  };
  r.add("POST", "/v1/chat/completions", generate(endpoint_kind::chat_completions));
  r.add("POST", "/v1/completions", generate(endpoint_kind::completions));
  r.add("POST", "/v1/responses", generate(endpoint_kind::responses));
  if (anthropic_api) {
    r.add("POST", "/v1/messages", generate(endpoint_kind::anthropic_messages));
    add_anthropic_routes(r);
  }
  r.add("POST", "/v1/embeddings", [this](http::request req, std::shared_ptr<http::http_responder> res) {
    if (reject_draining(*ctx_, *res) || reject_non_json(req, *res))
      return;
    // Parsing and tokenizing happen in the embedding actor, off the io thread.
    spawn_embedding_actor(sys_, embedding_job{ctx_, std::move(req.body), std::move(res),
                                              std::chrono::steady_clock::now(), inflight_guard(ctx_)});
  });
  r.add("POST", "/tokenize", [this](http::request req, std::shared_ptr<http::http_responder> res) {
    if (reject_non_json(req, *res))
      return;
    run_off_io(sys_, [ctx = ctx_, body = std::move(req.body), res = std::move(res)] {
      serve_tokenizer(*ctx, metrics::endpoint_label::tokenize, body, *res, openai::parse_tokenize_request,
                      [](const openai::tokenize_request& r, const model_entry& m) {
                        return openai::tokenize_body(r, m.card, *m.tokenizer, *m.chat_template);
                      });
    });
  });
  r.add("POST", "/detokenize", [this](http::request req, std::shared_ptr<http::http_responder> res) {
    if (reject_non_json(req, *res))
      return;
    run_off_io(sys_, [ctx = ctx_, body = std::move(req.body), res = std::move(res)] {
      serve_tokenizer(*ctx, metrics::endpoint_label::detokenize, body, *res,
                      openai::parse_detokenize_request,
                      [](const openai::detokenize_request& r, const model_entry& m) {
                        return openai::detokenize_body(r, *m.tokenizer);
                      });
    });
  });
  r.add("GET", "/v1/models", [this](http::request, std::shared_ptr<http::http_responder> res) {
    std::vector<openai::model_info> infos;
    for (const auto& m : ctx_->models.list())
      infos.push_back(info_of(*m));
    res->respond(200, std::string{json_type}, openai::model_list_body(infos));
  });
  r.add_prefix("GET", std::string{models_prefix},
               [this](http::request req, std::shared_ptr<http::http_responder> res) {
                 auto id = http::percent_decode(std::string_view{req.path}.substr(models_prefix.size()));
                 if (auto m = ctx_->models.find(id))
                   return (void)res->respond(200, std::string{json_type},
                                             openai::model_body(info_of(*m)));
                 respond_error(*res, openai::field_error(errc::not_found, "model",
                                                         openai::codes::model_not_found,
                                                         "The model '" + id + "' does not exist."));
               });
  r.add("GET", "/health", [this](http::request, std::shared_ptr<http::http_responder> res) {
    bool healthy = false;
    auto body = health_body(ctx_->models, healthy);
    res->respond(healthy ? 200 : 503, std::string{json_type}, std::move(body));
  });
  r.add("GET", "/live", [this](http::request, std::shared_ptr<http::http_responder> res) {
    if (ctx_->draining.load())
      return (void)res->respond(503, std::string{json_type}, R"({"status":"shutting_down"})");
    res->respond(200, std::string{json_type}, R"({"status":"live","message":"Service is live"})");
  });
  r.add("GET", "/metrics", [this](http::request, std::shared_ptr<http::http_responder> res) {
    res->respond(200, std::string{metrics::registry::content_type}, ctx_->registry.render());
  });
  r.add("GET", "/openapi.json", [](http::request, std::shared_ptr<http::http_responder> res) {
    res->respond(200, std::string{json_type}, std::string{openai::openapi_json()});
  });
  return r;
}

void frontend_service::add_anthropic_routes(http::router& r) {
  r.add("POST", "/v1/messages/count_tokens", [this](http::request req, std::shared_ptr<http::http_responder> res) {
    if (reject_non_json(req, *res, /*anthropic=*/true))
      return;
    run_off_io(sys_, [ctx = ctx_, body = std::move(req.body), res = std::move(res)] {
      auto out = [&]() -> expected<std::pair<std::string, std::string>> {
        auto chat_body = openai::translate_anthropic_count_request(body);
        if (!chat_body)
          return std::move(chat_body.error());
        auto chat = openai::parse_chat_request(*chat_body);
        if (!chat)
          return std::move(chat.error());
        auto m = find_model(ctx->models, chat->model);
        if (!m)
          return std::move(m.error());
        auto n = openai::count_chat_tokens(std::move(chat->chat), *(*m)->tokenizer, *(*m)->chat_template);
        if (!n)
          return std::move(n.error());
        return std::pair{(*m)->card.name, openai::anthropic_count_body(*n)};
      }();
      const auto ep = metrics::endpoint_label::anthropic_count_tokens;
      if (!out) {
        ctx->metrics->count_request("", ep, metrics::request_type::unary,
                                    metrics::error_type_of(code_of(out.error())));
        auto api = openai::to_api_error(out.error());
        return (void)res->respond(api.status, std::string{json_type}, openai::anthropic_error_body(api));
      }
      ctx->metrics->count_request(out->first, ep, metrics::request_type::unary, metrics::error_type::none);
      res->respond(200, std::string{json_type}, std::move(out->second));
    });
  });
}

expected<void> frontend_service::add_model(model_entry e) {
  if (e.chat_template) {
    auto f = openai::apply_overrides(openai::detect_output_format(*e.chat_template),
                                     ctx_->tool_call_parser, ctx_->reasoning_parser);
    if (!f)
      return std::move(f.error());
    e.output = *f;
    spdlog::info("model {}: tool calls parsed as {}, reasoning parsing {}", e.card.name,
                 openai::tool_format_name(e.output.tools), e.output.reasoning ? "on" : "off");
  }
  const std::string name = e.card.name;
  if (auto ok = ctx_->models.add(std::move(e)); !ok)
    return ok;
  ctx_->metrics->register_model(name);
  return {};
}

bool frontend_service::remove_model(std::string_view name) { return ctx_->models.remove(name); }

uint16_t frontend_service::port() const noexcept { return server_ ? server_->port() : 0; }

const metrics::registry& frontend_service::metrics_registry() const noexcept {
  return ctx_->registry;
}

std::shared_ptr<metrics::registry> frontend_service::shared_metrics_registry() const noexcept {
  return {ctx_, &ctx_->registry}; // shares ownership of the context that holds it
}

void frontend_service::stop() {
  if (server_)
    server_->stop();
}

int64_t frontend_service::inflight() const noexcept { return ctx_->inflight.load(); }

void frontend_service::count_migration(std::string_view model, bool ongoing) {
  ctx_->metrics->model_migration_total
    ->with({std::string{model}, ongoing ? "ongoing_request" : "new_request"})
    .inc();
}

void frontend_service::count_disagg(std::string_view model, bool remote) {
  ctx_->metrics->disagg_requests_total->with({std::string{model}, remote ? "remote" : "local_fallback"}).inc();
}

int64_t frontend_service::drain_and_stop(std::chrono::milliseconds grace) {
  ctx_->draining.store(true);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (ctx_->inflight.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto left = ctx_->inflight.load();
  stop();
  return left;
}

} // namespace dynamo::frontend
