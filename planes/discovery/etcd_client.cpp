#include "planes/discovery/etcd_client.hpp"

#include "planes/discovery/etcd_codec.hpp"
#include "runtime/core/http_url.hpp"

#include <future>

namespace dynamo::planes {

expected<etcd_endpoint> parse_etcd_endpoint(std::string_view url) {
  auto u = parse_http_or_https_url(url, "etcd endpoint", 2379);
  if (!u)
    return make_error(errc::config_error, message_of(u.error()));
  if (!u->target.empty() && u->target != "/")
    return make_error(errc::config_error, "etcd endpoint '" + std::string{url} + "': expected no path");
  return etcd_endpoint{std::move(u->host), u->port, u->tls};
}

etcd_client::etcd_client(std::vector<etcd_endpoint> endpoints, std::chrono::milliseconds timeout,
                         etcd_security security)
    : endpoints_(std::move(endpoints)), timeout_(timeout), security_(std::move(security)) {
  for (auto& e : endpoints_) {
    std::optional<http::client_tls> tls;
    if (e.tls)
      tls = http::client_tls{security_.ca_file, security_.cert_file, security_.key_file};
    clients_.push_back(std::make_unique<http::http_client>(e.host, e.port, 1, tls));
  }
}

etcd_client::~etcd_client() = default;

std::string etcd_client::current_url() const { return endpoints_[current_ % endpoints_.size()].url(); }

expected<http::client_response> etcd_client::attempt(size_t index, std::string_view path,
                                                     const std::string& body, const std::string& token,
                                                     std::chrono::milliseconds timeout) {
  struct result {
    std::promise<expected<http::client_response>> done;
    http::client_response response;
  };
  auto r = std::make_shared<result>();
  http::client_request req;
  req.target = std::string{path};
  req.body = body;
  req.cancel = std::make_shared<http::cancel_token>();
  if (!token.empty())
    req.headers.emplace_back("Authorization", token);
  auto cancel = req.cancel;
  http::client_callbacks cb;
  cb.on_status = [r](unsigned st) { r->response.status = st; };
  cb.on_data = [r](std::string_view d) {
    if (r->response.body.size() + d.size() <= etcd_codec::max_response_bytes + 1)
      r->response.body.append(d); // one byte past the limit: the parser refuses it
  };
  cb.on_done = [r](expected<void> ok) {
    if (ok)
      r->done.set_value(std::move(r->response));
    else
      r->done.set_value(std::move(ok.error()));
  };
  auto fut = r->done.get_future();
  clients_[index]->start(std::move(req), std::move(cb));
  if (fut.wait_for(timeout) != std::future_status::ready) {
    cancel->cancel(); // the late answer, if any, goes to `r`
    return make_error(errc::timeout, "etcd " + endpoints_[index].url() + std::string{path} + ": no answer");
  }
  auto resp = fut.get();
  if (!resp)
    return make_error(code_of(resp.error()) == errc::timeout ? errc::timeout : errc::io_error,
                      "etcd " + endpoints_[index].url() + ": " + message_of(resp.error()));
  return resp;
}

expected<http::client_response> etcd_client::call_any(std::string_view path, const std::string& body,
                                                      const std::string& token) {
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  caf::error last = make_error(errc::io_error, "etcd: no endpoint");
  size_t start = current_;
  // Two tries per endpoint: a transient failure (etcd restarting, a timeout) gets a
  // second chance before the next endpoint. (Stale pooled connections the http
  // client handles itself.) 5xx (no leader, a timed-out proposal) is worth another
  // endpoint; 4xx is not.
  for (size_t i = 0; i < 2 * endpoints_.size(); ++i) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds{0})
      break;
    size_t index = (start + i / 2) % endpoints_.size();
    auto out = attempt(index, path, body, token, left);
    if (out && out->status < 500) {
      current_ = index; // etcd answered (even with an error status)
      return out;
    }
    last = out ? make_error(errc::io_error, "etcd " + std::string{path} + " (HTTP " +
                                              std::to_string(out->status) + "): " +
                                              etcd_codec::error_text(out->body))
               : std::move(out.error());
  }
  current_ = (start + 1) % endpoints_.size();
  return last;
}

expected<std::string> etcd_client::token(bool refresh) {
  if (security_.username.empty())
    return std::string{};
  std::lock_guard lock{token_mutex_};
  if (!token_.empty() && !refresh)
    return token_;
  token_.clear();
  auto resp = call_any("/v3/auth/authenticate",
                       etcd_codec::authenticate_body(security_.username, security_.password), "");
  if (!resp)
    return std::move(resp.error());
  if (resp->status != 200)
    return make_error(errc::config_error, "etcd authentication as '" + security_.username + "' (HTTP " +
                                            std::to_string(resp->status) +
                                            "): " + etcd_codec::error_text(resp->body));
  auto t = etcd_codec::parse_token(resp->body);
  if (!t)
    return std::move(t.error());
  token_ = std::move(*t);
  return token_;
}

expected<std::string> etcd_client::call(std::string_view path, std::string body) {
  auto tok = token(false);
  if (!tok)
    return std::move(tok.error());
  auto resp = call_any(path, body, *tok);
  if (resp && resp->status == 401 && !security_.username.empty()) {
    // etcd forgot the token: it expired (--auth-token-ttl without use) or auth was reset.
    if (tok = token(true); !tok)
      return std::move(tok.error());
    resp = call_any(path, body, *tok);
  }
  if (!resp)
    return std::move(resp.error());
  if (resp->status == 200)
    return std::move(resp->body);
  auto code = resp->status == 404 ? errc::not_found : errc::invalid_argument;
  return make_error(code, "etcd " + std::string{path} + " (HTTP " + std::to_string(resp->status) +
                            "): " + etcd_codec::error_text(resp->body));
}

std::shared_ptr<http::cancel_token> etcd_client::stream(std::string_view path, std::string body,
                                                        http::client_callbacks cb) {
  http::client_request req;
  req.target = std::string{path};
  req.body = std::move(body);
  req.cancel = std::make_shared<http::cancel_token>();
  if (auto tok = token(false); tok && !tok->empty())
    req.headers.emplace_back("Authorization", *tok);
  auto cancel = req.cancel;
  clients_[current_ % clients_.size()]->start(std::move(req), std::move(cb));
  return cancel;
}

} // namespace dynamo::planes
