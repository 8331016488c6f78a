// A client of etcd's v3 JSON gateway over planes/http_client: blocking unary
// calls with a deadline and fail-over across the configured endpoints, and
// streamed calls (the watch) whose bytes go to callbacks; optional TLS (https
// endpoints, a CA, a client certificate) and user/password auth (a token
// fetched from /v3/auth/authenticate, fetched again when etcd refuses it).
// Used by etcd_discovery. Thread-safe; stream callbacks run on the client's
// I/O threads and must not block.
#pragma once

#include "planes/http_client/http_client.hpp"
#include "runtime/core/error.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::planes {

struct etcd_endpoint {
  std::string host;
  uint16_t port = 0;
  bool tls = false; ///< https://
  [[nodiscard]] std::string url() const {
    return (tls ? "https://" : "http://") + host + ":" + std::to_string(port);
  }
};

/// "http://host[:port]" or "https://host[:port]" (port 2379 by default),
/// parsed by runtime/core/http_url; errc::config_error for anything else (a
/// path, no scheme).
[[nodiscard]] expected<etcd_endpoint> parse_etcd_endpoint(std::string_view url);

/// How the client proves itself to etcd and checks etcd (docs/CLUSTER.md,
/// "Security"). Secrets are resolved already (no "env:" here).
struct etcd_security {
  std::string ca_file;   ///< https endpoints: the CA of etcd's certificate ("": the system's)
  std::string cert_file; ///< client certificate (etcd --client-cert-auth); "": none
  std::string key_file;
  std::string username;  ///< "": no authentication
  std::string password;
};

class etcd_client {
public:
  etcd_client(std::vector<etcd_endpoint> endpoints, std::chrono::milliseconds timeout,
              etcd_security security = {});
  ~etcd_client();
  etcd_client(const etcd_client&) = delete;
  etcd_client& operator=(const etcd_client&) = delete;

  /// POSTs `body` to `path` ("/v3/kv/put") and returns etcd's 200 body. A refused,
  /// broken or silent connection moves on to the next endpoint: errc::io_error (or
  /// errc::timeout) when none answered within the timeout (a 5xx counts as no
  /// answer). With a username, a refused token (HTTP 401: it expired, or auth
  /// was switched off and on) is replaced once and the call repeated. Other error statuses:
  /// errc::not_found for 404 (e.g. an unknown lease), errc::invalid_argument for
  /// the rest (a wrong password, a permission denied); the message is etcd's.
  [[nodiscard]] expected<std::string> call(std::string_view path, std::string body);

  /// Starts a streamed POST on the endpoint that answered last, with the
  /// current token. The returned token cancels it; on_done always runs once.
  [[nodiscard]] std::shared_ptr<http::cancel_token> stream(std::string_view path, std::string body,
                                                           http::client_callbacks cb);

  [[nodiscard]] std::string current_url() const;

private:
  /// One endpoint's answer: transport errors are errors, every status is a response.
  [[nodiscard]] expected<http::client_response> attempt(size_t index, std::string_view path,
                                                        const std::string& body, const std::string& token,
                                                        std::chrono::milliseconds timeout);
  /// attempt() across the endpoints until one answers below 500 or time is up.
  [[nodiscard]] expected<http::client_response> call_any(std::string_view path, const std::string& body,
                                                         const std::string& token);
  /// The current token ("" without a username), authenticating first when there is none.
  [[nodiscard]] expected<std::string> token(bool refresh);

  std::vector<etcd_endpoint> endpoints_;
  std::vector<std::unique_ptr<http::http_client>> clients_;
  std::chrono::milliseconds timeout_;
  etcd_security security_;
  std::atomic<size_t> current_{0};
  std::mutex token_mutex_; // held while authenticating: one request for a new token at a time
  std::string token_;
};

} // namespace dynamo::planes
