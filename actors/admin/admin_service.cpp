#include "actors/admin/admin_service.hpp"

#include "runtime/admin/admin_forward.hpp"
#include "runtime/admin/admin_wire.hpp"
#include "planes/http/server.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/core/host.hpp"
#include "runtime/core/ids.hpp"
#include "runtime/core/secret.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <exception>
#include <optional>
#include <vector>

namespace dynamo::admin {

namespace {

constexpr std::string_view json_type = "application/json";
constexpr std::string_view token_field = "admin_options.token";
/// Every method the catch-all route takes, so that the token is checked
/// before anything else (others get the transport's 405).
constexpr std::string_view methods[] = {"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};

using op = admin_op;

/// One request after routing: what to do and with which argument.
struct call {
  op what = op::health;
  uint64_t instance = 0;
  std::string name;
  bool forwarded = false; ///< arrived with forwarded_header: never forwarded again
};

using forward_work = admin_service::forward_work;

/// What forwarding a drain needs from the service.
struct forwarding {
  std::string token;
  std::chrono::milliseconds timeout;
  tls_files tls; ///< for an https:// host: the CA to trust, the certificate to present
  /// Starts `work` off the worker thread; false when too many forwards are in
  /// flight or the service is stopping.
  std::function<bool(forward_work)> spawn;
};

std::string_view code_for_status(unsigned status) noexcept {
  switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 431: return "headers_too_large";
    case 502: return "bad_gateway";
    case 503: return "overloaded";
    case 504: return "gateway_timeout";
    default: return "internal";
  }
}

void respond_error(http::http_responder& res, unsigned status, std::string_view message,
                   std::vector<http::header_field> headers = {}) {
  res.respond(status, std::string{json_type},
              error_json(message, error_type_for(status), code_for_status(status)),
              std::move(headers));
}

void respond_error(http::http_responder& res, const caf::error& err) {
  auto code = code_of(err);
  auto status = status_for(code);
  auto message = message_of(err);
  res.respond(status, std::string{json_type},
              error_json(message.empty() ? describe(err) : message, error_type_for(status),
                         to_string(code)));
}

/// Sends a drain/undrain on to the hosting process's admin API (marked, with
/// this process's token) and relays its status and body; 504 when it does not
/// answer within `f.timeout`, 502 when it cannot be reached, 503 when `cancel`
/// was cancelled (the service is stopping).
void forward_drain(const http_url& to, const call& c, const forwarding& f,
                   const std::shared_ptr<http::cancel_token>& cancel, http::http_responder& res) {
  bool on = c.what == op::drain;
  std::optional<http::client_tls> tls;
  if (to.tls)
    tls = http::client_tls{f.tls.ca_file, f.tls.cert_file, f.tls.key_file, ""};
  http::http_client client{to.host, to.port, 1, std::move(tls)};
  http::client_request req;
  req.method = "POST";
  const std::string target = "/admin/workers/" + to_hex(c.instance) + (on ? "/drain" : "/undrain");
  req.target = target;
  req.headers.emplace_back(std::string{forwarded_header}, "1");
  if (!f.token.empty())
    req.headers.emplace_back("Authorization", "Bearer " + std::string{f.token});
  req.cancel = cancel;
  auto answer = client.request(std::move(req), f.timeout);
  if (!answer) {
    bool stopping = cancel->cancelled();
    cancel->cancel();
    if (stopping)
      return respond_error(res, 503, "The admin service is stopping");
    bool timed_out = code_of(answer.error()) == errc::timeout;
    auto where = "the admin API of the process hosting worker " + to_hex(c.instance) + " (" +
                 (to.tls ? "https://" : "http://") + url_host(to.host) + ":" + std::to_string(to.port) + ")";
    spdlog::warn("admin: forwarding {} failed: {}", target, describe(answer.error()));
    return respond_error(res, timed_out ? 504 : 502,
                         timed_out ? where + " did not answer in " +
                                       std::to_string(f.timeout.count()) + " ms"
                                   : where + " is unreachable: " + message_of(answer.error()));
  }
  res.respond(answer->status, std::string{json_type}, std::move(answer->body));
}

/// Drains or undrains here when this process hosts the worker, else forwards
/// (on a thread of its own, so that a silent host holds up no other request).
void drain_or_forward(admin_backend& backend, const call& c, const forwarding& f,
                      const std::shared_ptr<http::http_responder>& res_ptr) {
  auto& res = *res_ptr;
  bool on = c.what == op::drain;
  auto local = backend.drain(c.instance, on);
  std::optional<instance_host> host;
  if (!local && code_of(local.error()) == errc::not_found && !c.forwarded) {
    auto found = backend.host_of(c.instance);
    if (!found)
      return respond_error(res, found.error());
    host = std::move(*found);
  }
  auto d = route_drain(local, c.forwarded, host);
  switch (d.route) {
    case drain_route::answer:
      if (!local)
        return respond_error(res, local.error());
      res.respond(200, std::string{json_type}, drain_json(c.instance, on));
      return;
    case drain_route::not_found:
      return respond_error(res, 404, message_of(local.error()) + "; " + d.why);
    case drain_route::forward: {
      auto work = [to = std::move(d.to), c, f, res_ptr](const std::shared_ptr<http::cancel_token>& cancel) {
        forward_drain(to, c, f, cancel, *res_ptr);
      };
      if (!f.spawn(std::move(work)))
        respond_error(res, 503, "Too many admin forwards in flight, or the service is stopping");
      return;
    }
  }
}

/// Runs one call against the backend (on the worker thread) and answers.
void execute(admin_backend& backend, const call& c, const forwarding& f,
             const std::shared_ptr<http::http_responder>& res_ptr) {
  auto& res = *res_ptr;
  switch (c.what) {
    case op::health:
      res.respond(200, std::string{json_type}, health_json(backend.process_kind()));
      return;
    case op::actors:
      res.respond(200, std::string{json_type}, actors_json(backend.actors()));
      return;
    case op::instances: {
      auto rows = backend.instances();
      if (!rows)
        return respond_error(res, rows.error());
      res.respond(200, std::string{json_type}, instances_json(*rows));
      return;
    }
    case op::drain:
    case op::undrain:
      return drain_or_forward(backend, c, f, res_ptr);
    case op::restart:
      if (auto r = backend.restart(c.name); !r)
        return respond_error(res, r.error());
      res.respond(200, std::string{json_type}, restarted_json(c.name));
      return;
  }
}

} // namespace

struct admin_service::forward {
  std::shared_ptr<http::cancel_token> cancel = std::make_shared<http::cancel_token>();
  std::atomic<bool> done{false};
  std::thread thread;
};

/// The HTTP side: authentication, routing and argument checks on the io
/// thread; backend calls handed to the worker thread.
class admin_service::routes {
public:
  static void handle(admin_service& svc, const http::request& req,
                     const std::shared_ptr<http::http_responder>& res) {
    if (!svc.token_.empty()) {
      auto auth = req.header("authorization");
      if (!bearer_matches(auth, svc.token_)) {
        spdlog::debug("admin: rejected {} {} from {} ({} token)", req.method, req.path,
                      req.remote, auth.empty() ? "no" : "wrong");
        return respond_error(*res, 401,
                             auth.empty() ? "This endpoint requires 'Authorization: Bearer <token>'"
                                          : "Invalid admin token",
                             {{"WWW-Authenticate", "Bearer realm=\"dynamo-admin\""}});
      }
    }
    auto m = match_admin_route(req.path);
    if (!m)
      return respond_error(*res, 404, "No admin route for " + req.path);
    if (req.method != m->method)
      return respond_error(*res, 405, "Method " + req.method + " not allowed for " + req.path,
                           {{"Allow", std::string{m->method}}});
    call c{m->what};
    c.forwarded = !req.header(forwarded_header).empty();
    if (c.what == op::drain || c.what == op::undrain) {
      auto id = parse_instance_hex(m->raw_arg);
      if (!id)
        return respond_error(*res, 400, "Malformed instance id '" + std::string{m->raw_arg} +
                                          "' (want 1 to 16 hex digits, not zero)");
      c.instance = *id;
    } else if (c.what == op::restart) {
      c.name = http::percent_decode(m->raw_arg);
      if (c.name.empty())
        return respond_error(*res, 400, "Empty actor name");
    }
    auto backend = svc.backend_;
    // The service outlives its jobs and forwards (stop() joins them all).
    forwarding f{svc.token_, svc.forward_timeout_, svc.tls_,
                 [s = &svc](forward_work w) { return s->spawn_forward(std::move(w)); }};
    auto run = [backend, c = std::move(c), f = std::move(f), res] {
      try {
        execute(*backend, c, f, res);
      } catch (const std::exception& e) {
        respond_error(*res, 500, std::string{"admin backend failed: "} + e.what());
      } catch (...) {
        respond_error(*res, 500, "admin backend failed");
      }
    };
    if (!svc.post(job{std::move(run), res}))
      respond_error(*res, 503, "Too many admin requests in flight, or the service is stopping");
  }
};

admin_service::admin_service(std::shared_ptr<admin_backend> backend, std::string token,
                             size_t max_queued, std::chrono::milliseconds forward_timeout, tls_files tls)
  : backend_(std::move(backend)), token_(std::move(token)), max_queued_(max_queued),
    forward_timeout_(forward_timeout), tls_(std::move(tls)) {
  worker_ = std::thread([this] { run_jobs(); });
}

admin_service::~admin_service() { stop(); }

expected<std::unique_ptr<admin_service>> admin_service::start(admin_options opts,
                                                              std::shared_ptr<admin_backend> backend) {
  if (!backend)
    return make_error(errc::invalid_argument, "admin_service: no backend");
  auto token = resolve_secret(opts.token, token_field);
  if (!token)
    return std::move(token.error());
  if (token->empty() && !is_loopback_host(opts.host))
    return make_error(errc::config_error,
                      std::string{token_field} + ": required when admin_options.host ('" +
                        opts.host + "') is not a loopback address");
  if (opts.max_queued == 0)
    return make_error(errc::config_error, "admin_options.max_queued: must be at least 1");
  bool with_token = !token->empty();
  std::unique_ptr<admin_service> svc{
    new admin_service(std::move(backend), std::move(*token), opts.max_queued,
                      opts.forward_timeout, opts.tls)};

  http::router r;
  for (auto method : methods)
    r.add_prefix(std::string{method}, "/",
                 [s = svc.get()](http::request req, std::shared_ptr<http::http_responder> res) {
                   routes::handle(*s, req, res);
                 });
  http::server_options so;
  so.host = opts.host;
  so.port = opts.port;
  so.io_threads = opts.io_threads;
  so.body_limit = 1u << 20; // admin requests carry no body worth reading
  if (!opts.tls.cert_file.empty() || !opts.tls.key_file.empty())
    so.tls = opts.tls;
  so.error_body = [](unsigned status, std::string_view message) {
    return error_json(message, error_type_for(status), code_for_status(status));
  };
  auto srv = http::server::start(std::move(so), std::move(r));
  if (!srv)
    return std::move(srv.error()); // ~admin_service joins the worker
  svc->server_ = std::move(*srv);
  svc->port_ = svc->server_->port();
  svc->https_ = svc->server_->scheme() == "https";
  spdlog::info("admin: {} API on {}://{}:{}/admin ({})", svc->backend_->process_kind(), svc->scheme(),
               url_host(opts.host), svc->port_, with_token ? "bearer token required" : "no token");
  return svc;
}

uint16_t admin_service::port() const noexcept { return port_; }

std::string_view admin_service::scheme() const noexcept { return https_ ? "https" : "http"; }

bool admin_service::post(job j) {
  std::lock_guard lock{mutex_};
  if (stopping_ || jobs_.size() >= max_queued_)
    return false;
  jobs_.push_back(std::move(j));
  cv_.notify_one();
  return true;
}

void admin_service::run_jobs() {
  for (;;) {
    job next;
    {
      std::unique_lock lock{mutex_};
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_)
        return;
      next = std::move(jobs_.front());
      jobs_.pop_front();
    }
    next.run();
  }
}

bool admin_service::spawn_forward(forward_work work) {
  std::lock_guard lock{mutex_};
  // Join the finished ones first (each has returned from its work already).
  for (auto it = forwards_.begin(); it != forwards_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = forwards_.erase(it);
    } else {
      ++it;
    }
  }
  if (stopping_ || forwards_.size() >= max_queued_)
    return false;
  auto f = std::make_unique<forward>();
  auto* raw = f.get();
  raw->thread = std::thread([raw, work = std::move(work)] {
    work(raw->cancel);
    raw->done = true;
  });
  forwards_.push_back(std::move(f));
  return true;
}

void admin_service::stop() {
  std::lock_guard stop_lock{stop_mutex_};
  // First refuse work (handlers answer 503 from here on), so that nothing
  // queued reaches the backend once stop() has begun.
  std::deque<job> dropped;
  std::list<std::unique_ptr<forward>> forwards;
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
    dropped.swap(jobs_);
    forwards.swap(forwards_);
    cv_.notify_all();
  }
  for (auto& j : dropped)
    respond_error(*j.res, 503, "The admin service is stopping");
  dropped.clear();
  // Forwards in flight answer 503 at once (the server still runs to carry it).
  for (auto& f : forwards)
    f->cancel->cancel();
  for (auto& f : forwards)
    f->thread.join();
  if (server_) {
    server_->stop();
    server_.reset(); // destroying it closes the connections it still holds
  }
  if (worker_.joinable())
    worker_.join();
}

} // namespace dynamo::admin
