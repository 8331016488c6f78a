#include "planes/http_client/http_client.hpp"

#include <utility> // before asio: g++ 12 + Boost 1.74 coroutine fix

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace dynamo::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
namespace ssl = asio::ssl;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

namespace {

// One connection: plain TCP or TLS over TCP (exactly one is set).
struct connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<tls_stream> tls;

  explicit operator bool() const noexcept { return plain || tls; }
  beast::tcp_stream& tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
};

/// How a connection the server closed fails a request written to it.
bool closed_by_peer(const beast::error_code& ec) {
  return ec == asio::error::eof || ec == bhttp::error::end_of_stream || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == ssl::error::stream_truncated;
}

} // namespace

void cancel_token::cancel() {
  std::lock_guard lk{mtx_};
  cancelled_ = true;
  // shutdown() (not close) is safe while the io thread waits on the socket:
  // its pending read completes, and the descriptor stays valid until detach().
  if (socket_ >= 0)
    ::shutdown(socket_, SHUT_RDWR);
}

bool cancel_token::cancelled() const {
  std::lock_guard lk{mtx_};
  return cancelled_;
}

bool cancel_token::attach(int native_socket) {
  std::lock_guard lk{mtx_};
  if (cancelled_)
    return false;
  socket_ = native_socket;
  return true;
}

void cancel_token::detach() {
  std::lock_guard lk{mtx_};
  socket_ = -1;
}

struct http_client::impl : std::enable_shared_from_this<impl> {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  std::vector<std::thread> threads;
  std::string host;
  uint16_t port;
  std::optional<ssl::context> tls;  // set for HTTPS
  std::string tls_error;            // why the TLS context could not be set up ("" when fine)
  std::mutex mtx;
  std::vector<connection> idle;
  std::atomic<uint64_t> opened{0};

  impl(std::string h, uint16_t p, const std::optional<client_tls>& t) : host(std::move(h)), port(p) {
    if (t)
      init_tls(*t);
  }

  void init_tls(const client_tls& t) {
    tls.emplace(ssl::context::tls_client);
    beast::error_code ec;
    tls->set_verify_mode(ssl::verify_peer, ec);
    if (!ec)
      t.ca_file.empty() ? (void)tls->set_default_verify_paths(ec) : (void)tls->load_verify_file(t.ca_file, ec);
    if (ec) {
      tls_error = "TLS trust store '" + (t.ca_file.empty() ? std::string{"default"} : t.ca_file) +
                  "': " + ec.message();
      return;
    }
    if (t.cert_file.empty() && t.key_file.empty())
      return;
    (void)tls->use_certificate_chain_file(t.cert_file, ec);
    if (!ec)
      (void)tls->use_private_key_file(t.key_file, ssl::context::pem, ec);
    if (ec)
      tls_error = "TLS client certificate '" + t.cert_file + "' / key '" + t.key_file + "': " + ec.message();
  }

  /// A pooled connection the server has not closed meanwhile (one it closed
  /// polls readable: end of stream, or a TLS close_notify), or none.
  connection take_idle() {
    std::lock_guard lk{mtx};
    while (!idle.empty()) {
      auto c = std::move(idle.back());
      idle.pop_back();
      pollfd p{c.tcp().socket().native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 0) == 0)
        return c;
    }
    return {};
  }

  void give_back(connection c) {
    std::lock_guard lk{mtx};
    idle.push_back(std::move(c));
  }

  // TLS over a connected socket: SNI (DNS names only), peer verification
  // against the host name or IP address, the handshake.
  asio::awaitable<connection> handshake(std::unique_ptr<beast::tcp_stream> s, beast::error_code& ec) {
    auto t = std::make_unique<tls_stream>(std::move(*s), *tls);
    beast::error_code not_ip;
    (void)asio::ip::make_address(host, not_ip);
    if (not_ip && !SSL_set_tlsext_host_name(t->native_handle(), host.c_str())) {
      ec = beast::error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category());
      co_return connection{};
    }
    t->set_verify_callback(ssl::host_name_verification(host), ec);
    if (ec)
      co_return connection{};
    co_await t->async_handshake(ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return connection{};
    co_return connection{nullptr, std::move(t)};
  }

  asio::awaitable<connection> connect(beast::error_code& ec) {
    tcp::resolver resolver{io};
    auto results = co_await resolver.async_resolve(host, std::to_string(port),
                                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return connection{};
    auto s = std::make_unique<beast::tcp_stream>(io);
    s->expires_after(std::chrono::seconds(10)); // the TCP connect and the TLS handshake
    co_await s->async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return connection{};
    s->socket().set_option(tcp::no_delay(true), ec);
    ec = {};
    opened.fetch_add(1, std::memory_order_relaxed);
    if (tls)
      co_return co_await handshake(std::move(s), ec);
    co_return connection{std::move(s), nullptr};
  }

  // Sends the request on `s` and streams the response; false + ec on failure.
  // `answered`: the response's headers arrived (the server took the request).
  template <class Stream>
  asio::awaitable<bool> exchange(Stream& s, const client_request& req, client_callbacks& cb, bool& keep_alive,
                                 bool& answered, beast::error_code& ec) {
    bhttp::request<bhttp::string_body> msg{bhttp::string_to_verb(req.method), req.target, 11};
    msg.set(bhttp::field::host, host);
    msg.set(bhttp::field::user_agent, "dynamo-http-client");
    for (const auto& [name, value] : req.headers)
      msg.set(name, value);
    if (req.method != "GET" && req.method != "HEAD") {
      msg.set(bhttp::field::content_type, req.content_type);
      msg.body() = req.body;
    }
    msg.keep_alive(true);
    msg.prepare_payload();
    beast::get_lowest_layer(s).expires_never();
    co_await bhttp::async_write(s, msg, asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return false;
    beast::flat_buffer buf;
    bhttp::response_parser<bhttp::buffer_body> parser;
    // Not boost::none: Beast 1.74 compares content-length > none as true (body_limit error).
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    co_await bhttp::async_read_header(s, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return false;
    answered = true;
    if (cb.on_status)
      cb.on_status(parser.get().result_int());
    std::array<char, 16384> tmp;
    while (!parser.is_done()) {
      parser.get().body().data = tmp.data();
      parser.get().body().size = tmp.size();
      // read_some: return as soon as some body arrived (async_read would wait for a full buffer).
      co_await bhttp::async_read_some(s, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == bhttp::error::need_buffer)
        ec = {};
      if (ec)
        co_return false;
      size_t got = tmp.size() - parser.get().body().size;
      if (got > 0 && cb.on_data)
        cb.on_data(std::string_view(tmp.data(), got));
    }
    keep_alive = parser.get().keep_alive();
    co_return true;
  }

  // One exchange on `c`, visible to the request's cancel token meanwhile.
  asio::awaitable<bool> attempt(connection& c, const client_request& req, client_callbacks& cb,
                                bool& keep_alive, bool& answered, beast::error_code& ec) {
    if (!c)
      co_return false;
    if (req.cancel && !req.cancel->attach(c.tcp().socket().native_handle()))
      co_return false;
    bool ok = c.tls ? co_await exchange(*c.tls, req, cb, keep_alive, answered, ec)
                    : co_await exchange(*c.plain, req, cb, keep_alive, answered, ec);
    if (req.cancel)
      req.cancel->detach();
    co_return ok;
  }

  asio::awaitable<void> run(client_request req, client_callbacks cb) {
    auto self = shared_from_this();
    auto cancelled = [&req] { return req.cancel && req.cancel->cancelled(); };
    if (bhttp::string_to_verb(req.method) == bhttp::verb::unknown || !tls_error.empty()) {
      if (cb.on_done)
        cb.on_done(make_error(tls_error.empty() ? errc::invalid_argument : errc::io_error,
                              "http " + req.target + ": " +
                                  (tls_error.empty() ? "unknown method '" + req.method + "'" : tls_error)));
      co_return;
    }
    beast::error_code ec;
    bool reused = true;
    auto s = take_idle();
    if (!s) {
      reused = false;
      s = co_await connect(ec);
    }
    bool keep_alive = false;
    bool answered = false;
    bool ok = co_await attempt(s, req, cb, keep_alive, answered, ec);
    if (!ok && reused && !answered && !cancelled() && closed_by_peer(ec)) {
      // The server closed the pooled connection as the request went out (a
      // race take_idle()'s check cannot see): it never answered, so the
      // request goes once more on a fresh connection.
      ec = {};
      s = co_await connect(ec);
      ok = co_await attempt(s, req, cb, keep_alive, answered, ec);
    }
    if (ok && keep_alive && !cancelled())
      give_back(std::move(s));
    if (!cb.on_done)
      co_return;
    if (!ok && cancelled())
      cb.on_done(make_error(errc::cancelled, "http " + req.target + ": cancelled by the caller"));
    else if (ok)
      cb.on_done(expected<void>{});
    else
      cb.on_done(make_error(errc::io_error, "http " + req.target + ": " + ec.message()));
  }
};

http_client::http_client(std::string host, uint16_t port, unsigned io_threads,
                         std::optional<client_tls> tls)
  : impl_(std::make_shared<impl>(std::move(host), port, tls)) {
  for (unsigned i = 0; i < std::max(1u, io_threads); ++i)
    impl_->threads.emplace_back([p = impl_.get()] { p->io.run(); });
}

http_client::~http_client() {
  impl_->guard.reset();
  {
    std::lock_guard lk{impl_->mtx};
    impl_->idle.clear();
  }
  impl_->io.stop();
  for (auto& t : impl_->threads)
    t.join();
}

void http_client::start(client_request req, client_callbacks cb) {
  asio::co_spawn(impl_->io, impl_->run(std::move(req), std::move(cb)), asio::detached);
}

expected<client_response> http_client::request(client_request req,
                                               std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<expected<client_response>>>();
  auto out = std::make_shared<client_response>();
  client_callbacks cb;
  cb.on_status = [out](unsigned st) { out->status = st; };
  cb.on_data = [out](std::string_view d) { out->body.append(d); };
  cb.on_done = [out, done](expected<void> r) {
    if (r)
      done->set_value(std::move(*out));
    else
      done->set_value(std::move(r.error()));
  };
  auto fut = done->get_future();
  auto cancel = req.cancel;
  start(std::move(req), std::move(cb));
  if (!cancel) {
    if (fut.wait_for(timeout) != std::future_status::ready)
      return make_error(errc::timeout, "http request timed out");
    return fut.get();
  }
  // In slices, so that a cancel while still connecting (nothing to shut down
  // yet) ends the wait too.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (fut.wait_for(std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(20))) ==
        std::future_status::ready)
      return fut.get();
    if (cancel->cancelled())
      return make_error(errc::cancelled, "http request cancelled by the caller");
    if (left <= std::chrono::milliseconds(0))
      return make_error(errc::timeout, "http request timed out");
  }
}

uint64_t http_client::connections_opened() const noexcept {
  return impl_->opened.load(std::memory_order_relaxed);
}

} // namespace dynamo::http
