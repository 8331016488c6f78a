// The planner's Kubernetes connector (research/dynamo.md 6.6): applies the
// planner's targets to each pool's worker Deployment (<prefix><pool>) through
// the scale subresource; the launcher's decisions record is the other side of
// the same seam. Called from planner_service's tick thread only; not thread-safe.
#pragma once

#include "planes/kubernetes/kubernetes_client.hpp"
#include "runtime/plan/decisions.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dynamo::apps {

/// Worker Deployments are named <prefix><pool> (deploy/k8s: "worker-<pool>").
inline constexpr std::string_view default_deployment_prefix = "worker-";

class kubernetes_connector {
public:
  /// errc::config_error when a pool's Deployment name is not a DNS-1123 label.
  [[nodiscard]] static expected<std::unique_ptr<kubernetes_connector>>
  create(std::unique_ptr<planes::kubernetes_client> client, std::string deployment_prefix,
         const std::vector<std::string>& pools);

  [[nodiscard]] std::string deployment(const std::string& pool) const { return prefix_ + pool; }

  /// Reads every pool's scale (a startup check: reachable, allowed, present)
  /// and logs it; the first error when any failed. Changes nothing.
  [[nodiscard]] expected<void> check();

  /// Sets each pool's Deployment to its target: GET the scale, PATCH replicas
  /// when spec.replicas differs. A pool already set to that target by an
  /// earlier call is skipped. Tries every pool; the first error when any
  /// failed (the planner logs it and retries the decision next interval).
  [[nodiscard]] expected<void> apply(const plan::planner_decisions& d);

private:
  kubernetes_connector(std::unique_ptr<planes::kubernetes_client> client, std::string prefix,
                       std::vector<std::string> pools);
  [[nodiscard]] expected<void> apply_one(const std::string& pool, uint32_t target);

  std::unique_ptr<planes::kubernetes_client> client_;
  std::string prefix_;
  std::vector<std::string> pools_;
  std::map<std::string, uint32_t> applied_; ///< pool -> replicas the Deployment was last set to
};

} // namespace dynamo::apps
