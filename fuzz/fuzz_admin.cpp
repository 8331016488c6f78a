// libFuzzer target: the admin REST API's parsers (runtime/admin/admin_wire.hpp):
// the route of a request path, the bearer check of an Authorization header,
// instance ids, loopback hosts, token specs (runtime/core/secret), and the JSON bodies built from
// hostile strings. Input: selector byte, then "a \0 b" (b optional).
#include "runtime/admin/admin_wire.hpp"
#include "runtime/core/host.hpp"
#include "runtime/core/ids.hpp"
#include "runtime/core/secret.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

using namespace dynamo;
using namespace dynamo::admin;

/// The bodies are JSON whatever the strings (invalid UTF-8 is replaced).
void must_parse(const std::string& body) {
  if (nlohmann::json::parse(body, nullptr, false).is_discarded())
    __builtin_trap();
}

void route(std::string_view path) {
  auto r = match_admin_route(path);
  if (!r)
    return;
  // The argument is one whole segment of the path.
  if (r->raw_arg.find('/') != std::string_view::npos ||
      (r->method != "GET" && r->method != "POST"))
    __builtin_trap();
  if (auto id = parse_instance_hex(r->raw_arg)) {
    if (parse_instance_hex(to_hex(*id)) != id)
      __builtin_trap();
    must_parse(drain_json(*id, true));
  }
}

void bearer(std::string_view auth, std::string_view token) {
  const bool ok = bearer_matches(auth, token);
  // Accepted only with a non-empty token, and "Bearer <token>" is always accepted
  // for a visible-ASCII token (what resolve_secret lets through).
  if (ok && token.empty())
    __builtin_trap();
  auto spec = resolve_secret(token, "f");
  if (token.substr(0, 4) != "env:" && spec && !spec->empty() &&
      !bearer_matches("bearer  " + *spec, *spec))
    __builtin_trap();
}

void bodies(std::string_view a, std::string_view b) {
  must_parse(error_json(a, b, a));
  must_parse(restarted_json(b));
  must_parse(health_json(a));
  must_parse(actors_json({{std::string{a}, std::string{b}, "running", 3, std::string{a}}}));
  must_parse(instances_json({{std::string{a}, 1, std::string{b}, "ready", {{std::string{b}, std::string{a}}}}}));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  auto cut = in.find('\0');
  std::string_view a = in.substr(0, cut);
  std::string_view b = cut == std::string_view::npos ? std::string_view{} : in.substr(cut + 1);
  switch (data[0] % 4) {
    case 0: route(a); break;
    case 1: bearer(a, b); break;
    case 2: (void)is_loopback_host(a); (void)parse_instance_hex(a); break;
    case 3: bodies(a, b); break;
  }
  return 0;
}
