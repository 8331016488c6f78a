#include "runtime/plan/kubernetes_scale.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dynamo::plan {

std::string deployment_scale_path(std::string_view ns, std::string_view deployment) {
  return fmt::format("/apis/apps/v1/namespaces/{}/deployments/{}/scale", ns, deployment);
}

std::string replicas_patch(uint32_t replicas) {
  return nlohmann::json{{"spec", {{"replicas", replicas}}}}.dump();
}

namespace {

// A non-negative 32-bit integer at `j[key]`, if there is one.
bool replicas_at(const nlohmann::json& j, const char* key, uint32_t& out) {
  if (!j.is_object())
    return false;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    return false;
  auto v = it->get<int64_t>();
  if (v < 0 || v > UINT32_MAX)
    return false;
  out = static_cast<uint32_t>(v);
  return true;
}

} // namespace

expected<deployment_scale> parse_scale(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return make_error(errc::malformed_message, "scale: not a JSON object");
  deployment_scale s;
  auto spec = j.find("spec");
  if (spec == j.end() || !replicas_at(*spec, "replicas", s.spec_replicas))
    return make_error(errc::malformed_message, "scale: no spec.replicas");
  if (auto status = j.find("status"); status != j.end())
    (void)replicas_at(*status, "replicas", s.status_replicas);
  return s;
}

caf::error api_error(std::string_view method, std::string_view path, unsigned status,
                     std::string_view body) {
  std::string detail;
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("kind", "") == "Status") {
    auto text = [&](const char* key) {
      auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
    };
    detail = text("reason");
    if (auto m = text("message"); !m.empty())
      detail += (detail.empty() ? "" : ": ") + m;
  } else if (!body.empty()) {
    detail = std::string{body.substr(0, 200)};
  }
  errc code = status == 404                   ? errc::not_found
              : status == 401 || status == 403 ? errc::config_error
                                               : errc::io_error;
  return make_error(code, fmt::format("kubernetes API {} {}: HTTP {}{}{}", method, path, status,
                                      detail.empty() ? "" : " ", detail));
}

bool is_dns1123_label(std::string_view name) noexcept {
  if (name.empty() || name.size() > 63)
    return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : name)
    if (!alnum(c) && c != '-')
      return false;
  return alnum(name.front()) && alnum(name.back());
}

} // namespace dynamo::plan
