// The admin REST API any process (frontend, worker, router, planner) starts over
// its admin_backend: health, actors, instances, drain, restart; bearer token optional.
// Thread rules: start/port/stop are thread-safe; backend calls run one at a
// time on the service's own worker thread, never on an HTTP io thread; each
// forwarded drain waits on a thread of its own, holding up no other request.
#pragma once

#include "actors/admin/admin_backend.hpp"
#include "runtime/core/error.hpp"
#include "runtime/core/tls.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace dynamo::http {
class server;
class http_responder;
class cancel_token;
} // namespace dynamo::http

namespace dynamo::admin {

struct admin_options {
  std::string host = "127.0.0.1"; ///< a non-loopback host requires a token
  uint16_t port = 0;              ///< 0 picks a free port (read it back with port())
  /// "" for none, a literal, or "env:NAME" (read from the environment at start).
  /// When set, every request must carry "Authorization: Bearer <token>".
  std::string token;
  unsigned io_threads = 1;
  size_t max_queued = 64; ///< admin requests waiting for the backend, and forwards in flight (503 beyond)
  /// How long a drain forwarded to the hosting process may take (504 beyond).
  std::chrono::milliseconds forward_timeout{5000};
  /// HTTPS when cert_file + key_file are set (with client_ca_file: mutual
  /// TLS). A drain forwarded to an https:// admin URL trusts ca_file ("": the
  /// system's store) and presents cert_file + key_file when set.
  tls_files tls;
};

/// Routes (JSON in and out; every error is {"error":{"message","type","code"}}):
///   GET  /admin/health                      {"status":"ok","process":kind}
///   GET  /admin/actors                      {"actors":[{supervisor,name,state,restarts,last_reason}]}
///   GET  /admin/instances                   {"instances":[{key,instance_id,address,health,admin_url,metadata}]}
///                                           (admin_url: the admin API of the instance's process)
///   POST /admin/workers/{hex}/drain|undrain {"instance_id":hex,"draining":bool}; 400 bad id;
///        a worker hosted elsewhere: forwarded (once, with the token) to the admin_url its
///        record publishes (https:// over TLS) and the host's answer relayed; 502/504 when the host does not
///        answer; 404 when no record has it or its host publishes no admin URL
///   POST /admin/actors/{name}/restart       {"restarted":name}; 404 unknown
/// Unknown paths 404, wrong methods 405 (with Allow), a missing or wrong token
/// 401 (checked before routing, so nothing is revealed without it).
class admin_service {
public:
  /// A forwarded drain's body, run on a thread of its own with the token that abandons it.
  using forward_work = std::function<void(const std::shared_ptr<http::cancel_token>&)>;

  /// errc::config_error (naming admin_options.token) when the host is not
  /// loopback and no token is set, or an "env:NAME" token is unset or empty;
  /// errc::invalid_argument without a backend; errc::io_error when binding fails.
  [[nodiscard]] static expected<std::unique_ptr<admin_service>>
  start(admin_options opts, std::shared_ptr<admin_backend> backend);

  ~admin_service();
  admin_service(const admin_service&) = delete;
  admin_service& operator=(const admin_service&) = delete;

  [[nodiscard]] uint16_t port() const noexcept;
  /// "https" when serving TLS, else "http".
  [[nodiscard]] std::string_view scheme() const noexcept;
  /// Refuses new requests and answers queued ones with 503, cancels the
  /// forwards in flight (they answer 503) and joins them, stops the server, and
  /// joins the worker thread (waiting for a backend call in progress, whose
  /// answer is then lost). Idempotent.
  void stop();

  class routes;

private:
  admin_service(std::shared_ptr<admin_backend> backend, std::string token, size_t max_queued,
                std::chrono::milliseconds forward_timeout, tls_files tls);
  struct job {
    std::function<void()> run; ///< calls the backend and answers; never throws
    std::shared_ptr<http::http_responder> res;
  };
  /// Queues a backend job; false when the queue is full or stopping.
  [[nodiscard]] bool post(job j);
  void run_jobs();
  struct forward; ///< one forwarded drain in flight: its thread and cancel token
  /// Runs `work` on a thread of its own; false when max_queued forwards are in
  /// flight or stopping. stop() cancels and joins them.
  [[nodiscard]] bool spawn_forward(forward_work work);

  std::shared_ptr<admin_backend> backend_;
  std::string token_;
  size_t max_queued_;
  std::chrono::milliseconds forward_timeout_;
  tls_files tls_; ///< a forward's client side: ca_file, cert_file, key_file
  std::unique_ptr<http::server> server_;
  uint16_t port_ = 0;
  bool https_ = false;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<job> jobs_;
  std::list<std::unique_ptr<forward>> forwards_;
  bool stopping_ = false;
  std::thread worker_;
  std::mutex stop_mutex_;
};

} // namespace dynamo::admin
