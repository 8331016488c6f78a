#include "runtime/core/http_url.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dynamo {

namespace {

// host[:port][/path], after the scheme.
expected<http_url> parse_after_scheme(std::string_view url, std::string_view rest, std::string_view what,
                                      uint16_t default_port) {
  auto bad = [&](std::string_view why) {
    return make_error(errc::invalid_argument, fmt::format("{} '{}': {}", what, url, why));
  };
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

} // namespace

expected<http_url> parse_http_url(std::string_view url, std::string_view what, uint16_t default_port) {
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, scheme.size()) != scheme)
    return make_error(errc::invalid_argument,
                      fmt::format("{} '{}': expected http://host[:port][/path]", what, url));
  return parse_after_scheme(url, url.substr(scheme.size()), what, default_port);
}

expected<http_url> parse_http_or_https_url(std::string_view url, std::string_view what,
                                           uint16_t default_port) {
  constexpr std::string_view https = "https://";
  if (url.substr(0, https.size()) != https)
    return parse_http_url(url, what, default_port != 0 ? default_port : uint16_t{80});
  auto out = parse_after_scheme(url, url.substr(https.size()), what, default_port != 0 ? default_port : uint16_t{443});
  if (out)
    out->tls = true;
  return out;
}

} // namespace dynamo
