#include "runtime/core/http_url.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dynamo {

expected<http_url> parse_http_url(std::string_view url, std::string_view what, uint16_t default_port) {
  constexpr std::string_view scheme = "http://";
  auto bad = [&](std::string_view why) {
    return make_error(errc::invalid_argument, fmt::format("{} '{}': {}", what, url, why));
  };
  if (url.substr(0, scheme.size()) != scheme)
    return bad("expected http://host[:port][/path]");
  std::string_view rest = url.substr(scheme.size());
  http_url out;
  out.port = default_port;
  size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    out.target = std::string{rest.substr(slash)};
    rest = rest.substr(0, slash);
  }
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos) {
    auto port = rest.substr(colon + 1);
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || ptr != port.data() + port.size() || value == 0 ||
        value > 65535)
      return bad("bad port");
    out.port = static_cast<uint16_t>(value);
    rest = rest.substr(0, colon);
  }
  if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']')
    rest = rest.substr(1, rest.size() - 2); // IPv6 literal
  if (rest.empty() || rest.find_first_of("@?# ") != std::string_view::npos)
    return bad("no host");
  out.host = std::string{rest};
  return out;
}

} // namespace dynamo
