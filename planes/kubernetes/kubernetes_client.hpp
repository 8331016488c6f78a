// A client of the Kubernetes API server for the planner's Kubernetes connector:
// GET and merge-PATCH a Deployment's scale subresource, over HTTPS with the pod's
// service-account token and CA (in-cluster) or at an explicit URL (plain HTTP for
// tests and `kubectl proxy`). Used by apps/dynamo-planner. Thread-safe.
#pragma once

#include "planes/http_client/http_client.hpp"
#include "runtime/core/error.hpp"
#include "runtime/plan/kubernetes_scale.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dynamo::planes {

/// Where a pod finds its service account (token, ca.crt, namespace).
inline constexpr std::string_view service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct kubernetes_api_options {
  /// "": in-cluster, https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
  /// with the service account's token and CA. Else http:// or https:// URL.
  std::string url;
  /// "": the service account's namespace file.
  std::string namespace_name;
  /// Bearer token file, read before every request (kubelet rotates it). "":
  /// the service account's in-cluster, none with an explicit URL.
  std::string token_file;
  /// CA bundle for https ("": the service account's ca.crt in-cluster, else
  /// the system's trust store).
  std::string ca_file;
  /// The service account directory (tests point it elsewhere).
  std::string account_dir = std::string{service_account_dir};
  std::chrono::milliseconds timeout{5000};
};

class kubernetes_client {
public:
  /// errc::config_error when in-cluster settings are missing (not in a pod,
  /// no namespace) or the URL is bad. Does not contact the server.
  [[nodiscard]] static expected<std::unique_ptr<kubernetes_client>> create(kubernetes_api_options o);

  /// GET .../deployments/<name>/scale.
  [[nodiscard]] expected<plan::deployment_scale> get_scale(std::string_view deployment);
  /// PATCH .../deployments/<name>/scale with {"spec":{"replicas":n}}
  /// (application/merge-patch+json); the Scale object the server answers.
  [[nodiscard]] expected<plan::deployment_scale> set_replicas(std::string_view deployment, uint32_t n);

  [[nodiscard]] const std::string& namespace_name() const noexcept { return namespace_; }
  [[nodiscard]] const std::string& url() const noexcept { return url_; }

private:
  kubernetes_client(kubernetes_api_options o, std::string url, std::string ns,
                    std::unique_ptr<http::http_client> client);
  [[nodiscard]] expected<plan::deployment_scale> call(std::string method, std::string_view deployment,
                                                      std::string body);

  kubernetes_api_options options_;
  std::string url_;
  std::string namespace_;
  std::unique_ptr<http::http_client> http_;
};

} // namespace dynamo::planes
