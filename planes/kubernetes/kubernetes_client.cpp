#include "planes/kubernetes/kubernetes_client.hpp"

#include "runtime/core/http_url.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dynamo::planes {

namespace {

// A whole small file, trailing whitespace removed; nullopt when unreadable.
std::optional<std::string> read_trimmed(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.pop_back();
  return s;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string{v} : std::string{};
}

// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 in brackets).
expected<std::string> in_cluster_url() {
  std::string host = env("KUBERNETES_SERVICE_HOST"), port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty())
    return make_error(errc::config_error,
                      "kubernetes: KUBERNETES_SERVICE_HOST/PORT are not set (not in a pod?); "
                      "give the API server's URL");
  if (host.find(':') != std::string::npos)
    host = "[" + host + "]";
  return "https://" + host + ":" + port;
}

} // namespace

expected<std::unique_ptr<kubernetes_client>> kubernetes_client::create(kubernetes_api_options o) {
  const bool in_cluster = o.url.empty();
  std::string url = o.url;
  if (in_cluster) {
    auto u = in_cluster_url();
    if (!u)
      return u.error();
    url = *u;
    if (o.token_file.empty())
      o.token_file = o.account_dir + "/token";
    if (o.ca_file.empty())
      o.ca_file = o.account_dir + "/ca.crt";
  }
  auto parsed = parse_http_or_https_url(url, "kubernetes API url");
  if (!parsed)
    return make_error(errc::config_error, message_of(parsed.error()));
  if (!parsed->target.empty() && parsed->target != "/")
    return make_error(errc::config_error, "kubernetes API url '" + url + "': a path is not supported");
  std::string ns = o.namespace_name;
  if (ns.empty()) {
    auto file = read_trimmed(o.account_dir + "/namespace");
    if (!file || file->empty())
      return make_error(errc::config_error, "kubernetes: no namespace given and none in " +
                                                o.account_dir + "/namespace");
    ns = *file;
  }
  if (!plan::is_dns1123_label(ns))
    return make_error(errc::config_error, "kubernetes: namespace '" + ns + "' is not a DNS-1123 label");
  std::optional<http::client_tls> tls;
  if (parsed->tls)
    tls = http::client_tls{o.ca_file};
  auto client = std::make_unique<http::http_client>(parsed->host, parsed->port, 1, tls);
  return std::unique_ptr<kubernetes_client>(
      new kubernetes_client(std::move(o), std::move(url), std::move(ns), std::move(client)));
}

kubernetes_client::kubernetes_client(kubernetes_api_options o, std::string url, std::string ns,
                                     std::unique_ptr<http::http_client> client)
  : options_(std::move(o)), url_(std::move(url)), namespace_(std::move(ns)), http_(std::move(client)) {}

expected<plan::deployment_scale> kubernetes_client::get_scale(std::string_view deployment) {
  return call("GET", deployment, {});
}

expected<plan::deployment_scale> kubernetes_client::set_replicas(std::string_view deployment, uint32_t n) {
  return call("PATCH", deployment, plan::replicas_patch(n));
}

expected<plan::deployment_scale> kubernetes_client::call(std::string method, std::string_view deployment,
                                                         std::string body) {
  if (!plan::is_dns1123_label(deployment))
    return make_error(errc::invalid_argument,
                      "kubernetes: deployment name '" + std::string{deployment} + "' is not a DNS-1123 label");
  http::client_request req;
  req.method = method;
  req.target = plan::deployment_scale_path(namespace_, deployment);
  req.headers.emplace_back("Accept", "application/json");
  if (!options_.token_file.empty()) {
    auto token = read_trimmed(options_.token_file);
    if (!token || token->empty())
      return make_error(errc::config_error, "kubernetes: cannot read the token " + options_.token_file);
    req.headers.emplace_back("Authorization", "Bearer " + *token);
  }
  if (method == "PATCH") {
    req.content_type = std::string{plan::merge_patch_content_type};
    req.body = std::move(body);
  }
  auto res = http_->request(req, options_.timeout);
  if (!res)
    return make_error(code_of(res.error()), // "http <target>: <why>"
                      "kubernetes API " + method + " at " + url_ + ": " + message_of(res.error()));
  if (res->status < 200 || res->status >= 300)
    return plan::api_error(method, req.target, res->status, res->body);
  return plan::parse_scale(res->body);
}

} // namespace dynamo::planes
