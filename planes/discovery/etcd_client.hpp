// A client of etcd's v3 JSON gateway over planes/http_client: blocking unary
// calls with a deadline and fail-over across the configured endpoints, and
// streamed calls (the watch) whose bytes go to callbacks. Used by etcd_discovery.
// Thread-safe; stream callbacks run on the client's I/O threads and must not block.
#pragma once

#include "planes/http_client/http_client.hpp"
#include "runtime/core/error.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::planes {

struct etcd_endpoint {
  std::string host;
  uint16_t port = 0;
  [[nodiscard]] std::string url() const { return "http://" + host + ":" + std::to_string(port); }
};

/// "http://host[:port]" (port 2379 by default), parsed by runtime/core/http_url;
/// errc::config_error for anything else (https, a path, no scheme).
[[nodiscard]] expected<etcd_endpoint> parse_etcd_endpoint(std::string_view url);

class etcd_client {
public:
  etcd_client(std::vector<etcd_endpoint> endpoints, std::chrono::milliseconds timeout);
  ~etcd_client();
  etcd_client(const etcd_client&) = delete;
  etcd_client& operator=(const etcd_client&) = delete;

  /// POSTs `body` to `path` ("/v3/kv/put") and returns etcd's 200 body. A refused,
  /// broken or silent connection moves on to the next endpoint: errc::io_error (or
  /// errc::timeout) when none answered within the timeout (a 5xx counts as no
  /// answer). Other error statuses: errc::not_found for 404 (e.g. an unknown
  /// lease), errc::invalid_argument for the rest; the message is etcd's.
  [[nodiscard]] expected<std::string> call(std::string_view path, std::string body);

  /// Starts a streamed POST on the endpoint that answered last. The returned
  /// token cancels it; on_done always runs once.
  [[nodiscard]] std::shared_ptr<http::cancel_token> stream(std::string_view path, std::string body,
                                                           http::client_callbacks cb);

  [[nodiscard]] std::string current_url() const;

private:
  [[nodiscard]] expected<std::string> attempt(size_t index, std::string_view path, const std::string& body,
                                              std::chrono::milliseconds timeout);

  std::vector<etcd_endpoint> endpoints_;
  std::vector<std::unique_ptr<http::http_client>> clients_;
  std::chrono::milliseconds timeout_;
  std::atomic<size_t> current_{0};
};

} // namespace dynamo::planes
