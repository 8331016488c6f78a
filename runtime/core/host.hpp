// Hosts in plane addresses: which bind hosts are wildcards (reachable from
// nowhere when advertised) or loopback (reachable from this machine only), and
// the address a bound socket advertises. Used by the cluster config's
// validation, the admin service and the planes. Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace dynamo {

/// "0.0.0.0", "::", "[::]", "*" or "": listens on every interface, names none.
[[nodiscard]] bool is_wildcard_host(std::string_view host) noexcept;

/// True for loopback literals (127.0.0.0/8, ::1, ::ffff:127.x) and "localhost"
/// (any case). A bracketed "[::1]" is a URL's spelling, not a host: false.
[[nodiscard]] bool is_loopback_host(std::string_view host);

/// `host` as a URL writes it: an IPv6 literal in brackets, anything else as it is.
[[nodiscard]] std::string url_host(std::string_view host);

/// `address` ("scheme://host:port", as ZeroMQ reports a bound endpoint) with
/// its host replaced by `host` (an IPv6 literal gets brackets); `address` as it
/// is when `host` is empty or it has no "scheme://host:port" shape (ipc://, inproc://).
[[nodiscard]] std::string with_host(std::string_view address, std::string_view host);

} // namespace dynamo
