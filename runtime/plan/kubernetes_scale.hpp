// The API-server side of the planner's Kubernetes connector (research/dynamo.md
// 6.6), pure: the apps/v1 Scale subresource's path and merge-patch body, a Scale
// object and an API error (metav1.Status) decoded, Deployment names checked.
// Called by planes/kubernetes and tests. Pure functions; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace dynamo::plan {

inline constexpr std::string_view merge_patch_content_type = "application/merge-patch+json";

/// "/apis/apps/v1/namespaces/<ns>/deployments/<deployment>/scale".
[[nodiscard]] std::string deployment_scale_path(std::string_view ns, std::string_view deployment);

/// The merge patch that sets a Deployment's replicas: {"spec":{"replicas":N}}.
[[nodiscard]] std::string replicas_patch(uint32_t replicas);

/// What a Scale object (autoscaling/v1) says.
struct deployment_scale {
  uint32_t spec_replicas = 0;   ///< asked for
  uint32_t status_replicas = 0; ///< pods the Deployment has now (0 when status is absent)
};

/// errc::malformed_message when `json` is not a Scale object with spec.replicas.
[[nodiscard]] expected<deployment_scale> parse_scale(std::string_view json);

/// The error for a non-2xx answer: 404 not_found, 401 and 403 config_error (the
/// token or the Role), anything else io_error (retried: 409, 429, 5xx). The
/// message names method, path, status and the Status object's reason/message.
[[nodiscard]] caf::error api_error(std::string_view method, std::string_view path, unsigned status,
                                   std::string_view body);

/// A Deployment name the API server accepts and its pods can carry: a DNS-1123
/// label (1..63 of [a-z0-9-], alphanumeric at both ends).
[[nodiscard]] bool is_dns1123_label(std::string_view name) noexcept;

} // namespace dynamo::plan
