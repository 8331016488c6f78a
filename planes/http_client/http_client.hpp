// A small asynchronous HTTP/1.1 client (Boost.Beast underneath, hidden here)
// with keep-alive connection reuse, streamed bodies and optional TLS (OpenSSL),
// for dynamo-bench, the planner (frontend metrics, the Kubernetes API) and tests.
// All methods are thread-safe; callbacks run on the client's I/O threads and must not block.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/core/tls.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dynamo::http {

/// Lets the caller abandon a request it started: cancel() shuts the request's
/// connection down at once, so the server sees its client leave, and the
/// request's on_done reports errc::cancelled (a request not connected yet is
/// never sent). The connection is not reused. Thread-safe; one per request.
class cancel_token {
public:
  void cancel();
  [[nodiscard]] bool cancelled() const;
  /// For http_client: the request now uses `native_socket`; false (nothing
  /// attached) when it was cancelled already.
  [[nodiscard]] bool attach(int native_socket);
  /// For http_client: the request is done with its socket (before closing or
  /// reusing it); a later cancel() touches nothing.
  void detach();

private:
  mutable std::mutex mtx_;
  int socket_ = -1;
  bool cancelled_ = false;
};

struct client_request {
  std::string method = "POST"; ///< any HTTP verb: GET, POST, PATCH, PUT, DELETE, ...
  std::string target;          ///< e.g. "/v1/completions"
  std::string body;
  std::string content_type = "application/json"; ///< sent with a body (any method but GET/HEAD)
  std::shared_ptr<cancel_token> cancel; ///< optional: to abandon the request
  /// Extra request headers (name, value), e.g. {"Authorization", "Bearer ..."}.
  std::vector<std::pair<std::string, std::string>> headers;
};

/// HTTPS: the server's certificate must chain to `ca_file` (PEM; "": the
/// system's default trust store) and name the host the client connects to (DNS
/// name or IP address SAN). With cert_file and key_file (PEM), the client
/// presents that certificate (mutual TLS). client_ca_file is not used.
using client_tls = tls_files;

struct client_callbacks {
  std::function<void(unsigned status)> on_status;       ///< once, when the headers arrive
  std::function<void(std::string_view bytes)> on_data;  ///< decoded body bytes, as they arrive
  std::function<void(expected<void>)> on_done;          ///< exactly once, at the end
};

struct client_response {
  unsigned status = 0;
  std::string body;
};

class http_client {
public:
  /// Connects lazily to host:port; `io_threads` threads run all I/O. With
  /// `tls`, every connection is HTTPS; a CA file that cannot be loaded fails
  /// each request (errc::io_error), it does not throw.
  http_client(std::string host, uint16_t port, unsigned io_threads = 1,
              std::optional<client_tls> tls = std::nullopt);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Starts a request and returns at once.
  void start(client_request req, client_callbacks cb);

  /// Blocking convenience wrapper around start(): errc::timeout after
  /// `timeout`; with req.cancel, errc::cancelled as soon as it is cancelled
  /// (connected or not).
  [[nodiscard]] expected<client_response> request(client_request req,
                                                  std::chrono::milliseconds timeout
                                                  = std::chrono::seconds(120));

  /// Connections opened so far (keep-alive reuse keeps this low).
  [[nodiscard]] uint64_t connections_opened() const noexcept;

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace dynamo::http
