#include "apps/dynamo-planner/kubernetes_connector.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::apps {

expected<std::unique_ptr<kubernetes_connector>>
kubernetes_connector::create(std::unique_ptr<planes::kubernetes_client> client, std::string deployment_prefix,
                             const std::vector<std::string>& pools) {
  for (const auto& pool : pools)
    if (!plan::is_dns1123_label(deployment_prefix + pool))
      return make_error(errc::config_error,
                        "kubernetes connector: pool '" + pool + "' gives the Deployment name '" +
                            deployment_prefix + pool +
                            "', not a DNS-1123 label (lowercase letters, digits, '-'; at most 63)");
  return std::unique_ptr<kubernetes_connector>(
      new kubernetes_connector(std::move(client), std::move(deployment_prefix), pools));
}

kubernetes_connector::kubernetes_connector(std::unique_ptr<planes::kubernetes_client> client,
                                           std::string prefix, std::vector<std::string> pools)
  : client_(std::move(client)), prefix_(std::move(prefix)), pools_(std::move(pools)) {}

expected<void> kubernetes_connector::check() {
  expected<void> first{};
  for (const auto& pool : pools_) {
    auto name = deployment(pool);
    auto s = client_->get_scale(name);
    if (!s) {
      spdlog::warn("kubernetes: pool {}: deployment {}/{}: {}", pool, client_->namespace_name(), name,
                   describe(s.error()));
      if (first)
        first = s.error();
      continue;
    }
    spdlog::info("kubernetes: pool {} is deployment {}/{}: {} replicas asked, {} present", pool,
                 client_->namespace_name(), name, s->spec_replicas, s->status_replicas);
  }
  return first;
}

expected<void> kubernetes_connector::apply_one(const std::string& pool, uint32_t target) {
  auto name = deployment(pool);
  auto now = client_->get_scale(name);
  if (!now)
    return now.error();
  if (now->spec_replicas != target) {
    auto set = client_->set_replicas(name, target);
    if (!set)
      return set.error();
    spdlog::info("kubernetes: deployment {}/{} scaled {} -> {} replicas", client_->namespace_name(), name,
                 now->spec_replicas, set->spec_replicas);
  }
  applied_[pool] = target;
  return {};
}

expected<void> kubernetes_connector::apply(const plan::planner_decisions& d) {
  expected<void> first{};
  for (const auto& [pool, target] : d.replicas) {
    if (auto it = applied_.find(pool); it != applied_.end() && it->second == target)
      continue;
    if (auto ok = apply_one(pool, target); !ok) {
      spdlog::warn("kubernetes: pool {} -> {} replicas not applied: {}", pool, target, describe(ok.error()));
      if (first)
        first = ok.error();
    }
  }
  return first;
}

} // namespace dynamo::apps
