// A transport-only HTTP/1.1 server (Boost.Beast + C++20 coroutines, kept out
// of this header): listens on host:port, reads requests with bounded headers
// and bodies and with timeouts, keeps connections alive, routes to handlers
// and writes what their responders say. Malformed HTTP gets 400, an unknown
// path 404, a wrong method 405, an oversized body 413; nothing crashes it.
// With options.tls it serves HTTPS only (OpenSSL): a failed or slow handshake,
// or a plaintext client, closes that one connection.
// Thread rules: start/port/stop are thread-safe; handlers run on one of
// `io_threads` io threads (per connection, one at a time) and must not block.
#pragma once

#include "planes/http/limits.hpp"
#include "planes/http/responder.hpp"
#include "planes/http/router.hpp"
#include "runtime/core/error.hpp"
#include "runtime/core/tls.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::http {

/// The parse limits (body_limit, header_limit) come from parse_limits; apps
/// may read DYN_HTTP_BODY_LIMIT_MB into body_limit.
struct server_options : parse_limits {
  std::string host = "127.0.0.1"; ///< address to bind ("0.0.0.0" for all IPv4)
  uint16_t port = 0;              ///< 0 picks a free port; read it back with server::port()
  unsigned io_threads = 1;        ///< threads running the io_context (>= 1)
  std::chrono::seconds idle_timeout{60};     ///< wait for the next request on a keep-alive connection
  std::chrono::seconds read_timeout{30};     ///< read one request body
  std::chrono::seconds write_timeout{30};    ///< each write to the client
  size_t backlog = 4096;                     ///< listen() backlog
  /// HTTPS: cert_file + key_file (PEM, the chain first); with client_ca_file,
  /// every client must present a certificate signed by it (mutual TLS);
  /// ca_file is not used. nullopt: plain HTTP.
  std::optional<tls_files> tls;
  std::chrono::seconds handshake_timeout{10}; ///< TLS only: the whole handshake
  /// Body for errors the transport answers itself (400, 404, 405, 413, 431,
  /// 500), sent as application/json. Default: {"error":{"message":..}}.
  std::function<std::string(unsigned status, std::string_view message)> error_body;
};

class server {
public:
  /// Binds, listens and starts the io threads. errc::io_error when the
  /// address cannot be resolved or bound; errc::invalid_argument for bad options;
  /// errc::config_error naming the file when a TLS certificate, key or CA cannot be loaded.
  [[nodiscard]] static expected<std::unique_ptr<server>> start(server_options opts, router routes);

  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The bound port (the ephemeral one when options.port was 0).
  [[nodiscard]] uint16_t port() const noexcept;
  /// "https" with options.tls, else "http".
  [[nodiscard]] std::string_view scheme() const noexcept;

  /// Stops accepting, fires on_disconnect for every unfinished response,
  /// closes all connections and joins the io threads. Idempotent. Must not be
  /// called from a handler.
  void stop();

  class impl;

private:
  explicit server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace dynamo::http
