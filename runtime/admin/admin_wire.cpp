#include "runtime/admin/admin_wire.hpp"

#include "runtime/core/ids.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace dynamo::admin {

namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) {
  // `replace`: a non-UTF-8 name never throws out of here.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool equal_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/// Equality whose running time depends only on the two lengths.
bool constant_time_equal(std::string_view a, std::string_view b) {
  volatile unsigned char diff = a.size() != b.size() ? 1 : 0;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

} // namespace

bool bearer_matches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view scheme = "Bearer";
  if (token.empty() || authorization.size() <= scheme.size() ||
      !equal_ignore_case(authorization.substr(0, scheme.size()), scheme) ||
      authorization[scheme.size()] != ' ')
    return false;
  auto given = authorization.substr(scheme.size());
  while (!given.empty() && given.front() == ' ')
    given.remove_prefix(1);
  while (!given.empty() && (given.back() == ' ' || given.back() == '\t'))
    given.remove_suffix(1);
  return constant_time_equal(given, token);
}

std::optional<uint64_t> parse_instance_hex(std::string_view text) {
  if (text.empty() || text.size() > 16)
    return std::nullopt;
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id, 16);
  if (ec != std::errc{} || end != text.data() + text.size() || id == 0)
    return std::nullopt;
  return id;
}

namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  if (path.empty() || path.front() != '/')
    return out;
  path.remove_prefix(1);
  for (;;) {
    auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos)
      return out;
    path.remove_prefix(slash + 1);
  }
}

} // namespace

std::optional<admin_route> match_admin_route(std::string_view path) {
  auto seg = split_path(path);
  if (seg.size() < 2 || seg[0] != "admin")
    return std::nullopt;
  if (seg.size() == 2) {
    if (seg[1] == "health")
      return admin_route{"GET", admin_op::health, {}};
    if (seg[1] == "actors")
      return admin_route{"GET", admin_op::actors, {}};
    if (seg[1] == "instances")
      return admin_route{"GET", admin_op::instances, {}};
    return std::nullopt;
  }
  if (seg.size() != 4)
    return std::nullopt;
  if (seg[1] == "workers" && (seg[3] == "drain" || seg[3] == "undrain"))
    return admin_route{"POST", seg[3] == "drain" ? admin_op::drain : admin_op::undrain, seg[2]};
  if (seg[1] == "actors" && seg[3] == "restart")
    return admin_route{"POST", admin_op::restart, seg[2]};
  return std::nullopt;
}

std::string health_json(std::string_view process_kind) {
  return dump(json{{"status", "ok"}, {"process", process_kind}});
}

std::string actors_json(const std::vector<actor_row>& rows) {
  auto list = json::array();
  for (const auto& r : rows)
    list.push_back(json{{"supervisor", r.supervisor},
                        {"name", r.name},
                        {"state", r.state},
                        {"restarts", r.restarts},
                        {"last_reason", r.last_reason}});
  return dump(json{{"actors", std::move(list)}});
}

std::string instances_json(const std::vector<instance_row>& rows) {
  auto list = json::array();
  for (const auto& r : rows) {
    auto metadata = json::object();
    for (const auto& [k, v] : r.metadata)
      metadata[k] = v;
    json row{{"key", r.key},
             {"instance_id", to_hex(r.instance_id)},
             {"address", r.address},
             {"health", r.health},
             {"admin_url", r.admin_url},
             {"metadata", std::move(metadata)}};
    if (r.routing) {
      json blocks = nullptr;
      if (r.routing->kv_capacity_blocks)
        blocks = *r.routing->kv_capacity_blocks;
      row["routing"] = json{{"router", r.routing->router},
                            {"kv_capacity_rule", r.routing->kv_capacity_rule},
                            {"kv_capacity_blocks", std::move(blocks)}};
    }
    list.push_back(std::move(row));
  }
  return dump(json{{"instances", std::move(list)}});
}

std::string drain_json(uint64_t instance_id, bool draining) {
  return dump(json{{"instance_id", to_hex(instance_id)}, {"draining", draining}});
}

std::string restarted_json(std::string_view name) { return dump(json{{"restarted", name}}); }

std::string error_json(std::string_view message, std::string_view type, std::string_view code) {
  return dump(json{{"error", {{"message", message}, {"type", type}, {"code", code}}}});
}

std::string_view error_type_for(unsigned status) noexcept {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 405: return "method_not_allowed";
    case 503: return "service_unavailable";
    case 504: return "timeout";
    default: return status >= 400 && status < 500 ? "invalid_request_error" : "server_error";
  }
}

unsigned status_for(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument:
    case errc::malformed_message: return 400;
    case errc::not_found: return 404;
    case errc::unsupported: return 501;
    case errc::timeout: return 504;
    case errc::overloaded:
    case errc::closed:
    case errc::no_workers:
    case errc::disconnected: return 503;
    default: return 500;
  }
}

} // namespace dynamo::admin
