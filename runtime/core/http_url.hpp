// "http://host[:port][/path]" split into what an HTTP client needs, for every
// URL a config names (the planner's metrics URL, etcd endpoints; https:// for
// the Kubernetes API server and etcd). Pure functions; any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace dynamo {

struct http_url {
  std::string host;   ///< without IPv6 brackets
  uint16_t port = 80;
  std::string target; ///< the path; "" when the URL has none
  bool tls = false;   ///< https:// (parse_http_or_https_url only)
};

/// errc::invalid_argument, "<what> '<url>': <why>", for anything else (https,
/// no host, a bad port). A URL without a port gets `default_port`.
[[nodiscard]] expected<http_url> parse_http_url(std::string_view url, std::string_view what = "url",
                                                uint16_t default_port = 80);

/// As parse_http_url, and also "https://host[:port][/path]" (tls), for clients
/// that speak TLS (the Kubernetes API server, etcd). A URL without a port gets
/// `default_port`, or when it is 0, 80 (http) or 443 (https).
[[nodiscard]] expected<http_url> parse_http_or_https_url(std::string_view url, std::string_view what = "url",
                                                         uint16_t default_port = 0);

} // namespace dynamo
