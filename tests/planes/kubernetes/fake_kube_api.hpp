// A fake Kubernetes API server (the project's planes/http server) for the Kubernetes
// connector's tests: the Deployment scale subresource of in-memory Deployments,
// every request recorded (method, target, Authorization, Content-Type, body),
// scripted errors. Handlers run on the server's io thread; accessors lock.
#pragma once

#include "planes/http/responder.hpp"
#include "planes/http/server.hpp"
#include "tests/planes/support/support.hpp" // errc printing for BOOST_TEST

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace dynamo::test {

struct recorded_request {
  std::string method, target, authorization, content_type, body;
};

class fake_kube_api {
public:
  /// Serves namespace `ns`; requests must carry "Authorization: Bearer <token>" (else 401).
  fake_kube_api(std::string ns, std::string token) : ns_(std::move(ns)), token_(std::move(token)) {
    http::router r;
    const std::string prefix = "/apis/apps/v1/namespaces/";
    for (const char* m : {"GET", "PATCH"})
      r.add_prefix(m, prefix, [this](http::request req, std::shared_ptr<http::http_responder> res) {
        auto [status, body] = handle(req);
        (void)res->respond(status, "application/json", body);
      });
    auto s = http::server::start({.host = "127.0.0.1", .port = 0}, std::move(r));
    BOOST_REQUIRE(s);
    srv_ = std::move(*s);
  }
  ~fake_kube_api() { stop(); }

  void stop() {
    if (srv_)
      srv_->stop();
  }
  [[nodiscard]] uint16_t port() const { return srv_->port(); }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }

  void add_deployment(const std::string& name, uint32_t replicas) {
    std::lock_guard lk{m_};
    replicas_[name] = replicas;
  }
  /// The next requests for `deployment` answer `status` with a Status object (`reason`).
  void fail(const std::string& deployment, unsigned status, std::string reason) {
    std::lock_guard lk{m_};
    failures_[deployment] = {status, std::move(reason)};
  }
  void heal(const std::string& deployment) {
    std::lock_guard lk{m_};
    failures_.erase(deployment);
  }
  [[nodiscard]] uint32_t replicas(const std::string& name) {
    std::lock_guard lk{m_};
    return replicas_.at(name);
  }
  [[nodiscard]] std::vector<recorded_request> take_requests() {
    std::lock_guard lk{m_};
    return std::exchange(requests_, {});
  }

private:
  static std::string status_object(unsigned code, const std::string& reason, const std::string& message) {
    return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                          {"reason", reason}, {"message", message}, {"code", code}}
        .dump();
  }

  std::string scale_object(const std::string& name, uint32_t replicas) const {
    return nlohmann::json{{"kind", "Scale"},
                          {"apiVersion", "autoscaling/v1"},
                          {"metadata", {{"name", name}, {"namespace", ns_}}},
                          {"spec", {{"replicas", replicas}}},
                          {"status", {{"replicas", replicas}, {"selector", "app=" + name}}}}
        .dump();
  }

  std::pair<unsigned, std::string> handle(const http::request& req) {
    std::lock_guard lk{m_};
    requests_.push_back({req.method, req.target, std::string{req.header("Authorization")},
                         std::string{req.header("Content-Type")}, req.body});
    if (req.header("Authorization") != "Bearer " + token_)
      return {401, status_object(401, "Unauthorized", "Unauthorized")};
    const std::string prefix = "/apis/apps/v1/namespaces/" + ns_ + "/deployments/", suffix = "/scale";
    if (req.path.rfind(prefix, 0) != 0 || req.path.size() <= prefix.size() + suffix.size() ||
        req.path.compare(req.path.size() - suffix.size(), suffix.size(), suffix) != 0)
      return {404, status_object(404, "NotFound", "the server could not find the requested resource")};
    auto name = req.path.substr(prefix.size(), req.path.size() - prefix.size() - suffix.size());
    if (auto f = failures_.find(name); f != failures_.end())
      return {f->second.first, status_object(f->second.first, f->second.second, "scripted failure of " + name)};
    auto it = replicas_.find(name);
    if (it == replicas_.end())
      return {404, status_object(404, "NotFound", "deployments.apps \"" + name + "\" not found")};
    if (req.method == "PATCH") {
      if (req.header("Content-Type") != "application/merge-patch+json")
        return {415, status_object(415, "UnsupportedMediaType", "not a merge patch")};
      auto j = nlohmann::json::parse(req.body, nullptr, false);
      if (!j.is_object() || !j.contains("spec") || !j["spec"].contains("replicas") ||
          !j["spec"]["replicas"].is_number_unsigned())
        return {422, status_object(422, "Invalid", "bad patch")};
      it->second = j["spec"]["replicas"].get<uint32_t>();
    }
    return {200, scale_object(name, it->second)};
  }

  std::string ns_, token_;
  std::mutex m_;
  std::map<std::string, uint32_t> replicas_;
  std::map<std::string, std::pair<unsigned, std::string>> failures_;
  std::vector<recorded_request> requests_;
  std::unique_ptr<http::server> srv_;
};

} // namespace dynamo::test
