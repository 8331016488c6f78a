#include "runtime/core/host.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace dynamo {

bool is_wildcard_host(std::string_view host) noexcept {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

bool is_loopback_host(std::string_view host) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  if (std::ranges::equal(host, std::string_view{"localhost"}, {}, lower))
    return true;
  std::string text{host};
  unsigned char v4[4];
  if (::inet_pton(AF_INET, text.c_str(), v4) == 1)
    return v4[0] == 127;
  unsigned char v6[16];
  if (::inet_pton(AF_INET6, text.c_str(), v6) != 1)
    return false;
  static constexpr unsigned char loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(v6, loopback, 16) == 0)
    return true;
  return std::memcmp(v6, mapped, 12) == 0 && v6[12] == 127;
}

std::string url_host(std::string_view host) {
  const bool ipv6 = host.find(':') != std::string_view::npos && !host.starts_with('[');
  return ipv6 ? "[" + std::string{host} + "]" : std::string{host};
}

std::string with_host(std::string_view address, std::string_view host) {
  const size_t scheme = address.find("://");
  const size_t colon = address.rfind(':');
  if (host.empty() || scheme == std::string_view::npos || colon == std::string_view::npos || colon <= scheme + 2)
    return std::string{address};
  std::string out{address.substr(0, scheme + 3)};
  out += url_host(host);
  out += address.substr(colon);
  return out;
}

} // namespace dynamo
