#include "runtime/core/host.hpp"

namespace dynamo {

bool is_wildcard_host(std::string_view host) noexcept {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
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
