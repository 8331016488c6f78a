// Hosts in plane addresses: which bind hosts are wildcards (reachable from
// nowhere when advertised) and the address a bound socket advertises. Used by
// the cluster config's validation and by the planes when they publish where
// they listen. Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace dynamo {

/// "0.0.0.0", "::", "[::]", "*" or "": listens on every interface, names none.
[[nodiscard]] bool is_wildcard_host(std::string_view host) noexcept;

/// `host` as a URL writes it: an IPv6 literal in brackets, anything else as it is.
[[nodiscard]] std::string url_host(std::string_view host);

/// `address` ("scheme://host:port", as ZeroMQ reports a bound endpoint) with
/// its host replaced by `host` (an IPv6 literal gets brackets); `address` as it
/// is when `host` is empty or it has no "scheme://host:port" shape (ipc://, inproc://).
[[nodiscard]] std::string with_host(std::string_view address, std::string_view host);

} // namespace dynamo
