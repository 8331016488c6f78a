#include "actors/frontend/frontend_service.hpp"

#include "actors/frontend/request_actor.hpp"
#include "runtime/openai/error.hpp"
#include "runtime/openai/openapi.hpp"
#include "runtime/openai/output_format.hpp"
#include "runtime/openai/response.hpp"

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
  auto srv = http::server::start(std::move(opts.http), svc->make_routes());
  if (!srv)
    return std::move(srv.error());
  svc->server_ = std::move(*srv);
  return svc;
}

http::router frontend_service::make_routes() {
  http::router r;
  auto generate = [this](endpoint_kind kind) {
    return [this, kind](http::request req, std::shared_ptr<http::http_responder> res) {
      if (ctx_->draining.load()) {
        return respond_error(*res, make_error(errc::closed, "the server is shutting down"));
      }
      if (!http::is_json_media_type(req.header("content-type"))) {
        auto got = req.header("content-type");
        return (void)res->respond(
          415, std::string{json_type},
          openai::status_error_body(415, "Expected request with `Content-Type: application/json`, got " +
                                           (got.empty() ? std::string{"none"} : "`" + std::string{got} + "`")));
      }
      ctx_->inflight.fetch_add(1);
      std::shared_ptr<void> guard(nullptr, [ctx = ctx_](void*) { ctx->inflight.fetch_sub(1); });
      // Parsing and tokenizing happen in the request actor, off the io thread.
      spawn_request_actor(sys_, request_job{ctx_, kind, std::move(req.body), std::move(res),
                                            std::chrono::steady_clock::now(), std::move(guard)});
    };
  };
  r.add("POST", "/v1/chat/completions", generate(endpoint_kind::chat_completions));
  r.add("POST", "/v1/completions", generate(endpoint_kind::completions));
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
  return ctx_->models.add(std::move(e));
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
