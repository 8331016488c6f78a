#include "planes/http/session.hpp"

#include <spdlog/spdlog.h>

#include <exception>

namespace dynamo::http {

namespace {

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xF];
          out += hex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out;
}

template <class Stream>
void spawn_session(tcp::socket socket, server::impl& srv) {
  auto s = std::make_shared<session<Stream>>(std::move(socket), srv);
  net::co_spawn(
    s->executor(), [s]() -> net::awaitable<void> { co_await s->run(); },
    [](std::exception_ptr e) {
      if (!e)
        return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::error("http: connection failed: {}", ex.what());
      } catch (...) {
        spdlog::error("http: connection failed");
      }
    });
}

/// The server's TLS context from its files; config_error naming the file that fails.
caf::error open_tls(server::impl& srv) {
  const auto& t = *srv.opts.tls;
  if (auto bad = check_tls_files(t, true))
    return make_error(errc::config_error, "tls." + bad->key + ": " + bad->why);
  auto& ctx = srv.tls.emplace(net::ssl::context::tls_server);
  beast::error_code ec;
  ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                    net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                    net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use,
                  ec);
  // No renegotiation (TLS 1.2): a client cannot make the server redo handshakes.
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_NO_RENEGOTIATION);
  auto fail = [&](std::string_view key, const std::string& file) {
    return make_error(errc::config_error,
                      "tls." + std::string{key} + ": cannot load '" + file + "': " + ec.message());
  };
  if (ctx.use_certificate_chain_file(t.cert_file, ec); ec)
    return fail("cert_file", t.cert_file);
  // OpenSSL also checks that the key is the certificate's ("key values mismatch").
  if (ctx.use_private_key_file(t.key_file, net::ssl::context::pem, ec); ec)
    return fail("key_file", t.key_file);
  if (!t.client_ca_file.empty()) {
    if (ctx.load_verify_file(t.client_ca_file, ec); ec)
      return fail("client_ca_file", t.client_ca_file);
    ctx.set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert, ec);
  }
  return {};
}

net::awaitable<void> accept_loop(server::impl& srv) {
  for (;;) {
    tcp::socket socket{net::make_strand(srv.ioc)};
    beast::error_code ec;
    co_await srv.acceptor.async_accept(socket, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (!srv.acceptor.is_open() || ec == net::error::operation_aborted)
        co_return;
      // Out of descriptors and the like: back off instead of spinning.
      spdlog::warn("http: accept failed: {}", ec.message());
      net::steady_timer pause{srv.ioc, std::chrono::milliseconds(50)};
      co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
      continue;
    }
    if (srv.tls)
      spawn_session<tls_stream>(std::move(socket), srv);
    else
      spawn_session<beast::tcp_stream>(std::move(socket), srv);
  }
}

caf::error open_acceptor(server::impl& srv) {
  beast::error_code ec;
  tcp::resolver resolver{srv.ioc};
  auto results = resolver.resolve(srv.opts.host, std::to_string(srv.opts.port),
                                  tcp::resolver::passive, ec);
  if (ec || results.empty())
    return make_error(errc::io_error, "cannot resolve " + srv.opts.host + ": " + ec.message());
  auto ep = results.begin()->endpoint();
  srv.acceptor.open(ep.protocol(), ec);
  if (!ec)
    srv.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec)
    srv.acceptor.bind(ep, ec);
  if (!ec)
    srv.acceptor.listen(static_cast<int>(srv.opts.backlog), ec);
  if (ec)
    return make_error(errc::io_error, "cannot listen on " + srv.opts.host + ":" +
                                        std::to_string(srv.opts.port) + ": " + ec.message());
  srv.port = srv.acceptor.local_endpoint(ec).port();
  return {};
}

} // namespace

// -- server::impl -------------------------------------------------------------

bool server::impl::track(const std::shared_ptr<detail::exchange>& ex) {
  std::lock_guard lock{live_mutex_};
  if (detached_all_)
    return false;
  live_.emplace(ex.get(), ex);
  return true;
}

void server::impl::untrack(const detail::exchange* ex) {
  std::lock_guard lock{live_mutex_};
  live_.erase(ex);
}

void server::impl::detach_all() {
  std::vector<std::shared_ptr<detail::exchange>> all;
  {
    std::lock_guard lock{live_mutex_};
    detached_all_ = true;
    for (auto& [_, weak] : live_)
      if (auto ex = weak.lock())
        all.push_back(std::move(ex));
  }
  for (auto& ex : all)
    ex->detach(); // fires on_disconnect outside our lock
}

std::string server::impl::error_body(unsigned status, std::string_view message) const {
  if (opts.error_body)
    return opts.error_body(status, message);
  return "{\"error\":{\"message\":\"" + json_escape(message) + "\"}}";
}

// -- server -------------------------------------------------------------------

server::server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

server::~server() { stop(); }

expected<std::unique_ptr<server>> server::start(server_options opts, router routes) {
  if (opts.io_threads == 0)
    return make_error(errc::invalid_argument, "io_threads must be at least 1");
  if (opts.body_limit == 0 || opts.header_limit == 0)
    return make_error(errc::invalid_argument, "body_limit and header_limit must be positive");
  if (opts.tls && opts.handshake_timeout.count() <= 0)
    return make_error(errc::invalid_argument, "handshake_timeout must be positive");
  auto p = std::make_unique<impl>(std::move(opts), std::move(routes));
  if (p->opts.tls)
    if (auto err = open_tls(*p))
      return err;
  if (auto err = open_acceptor(*p))
    return err;
  auto& srv = *p;
  net::co_spawn(srv.ioc, accept_loop(srv), [](std::exception_ptr e) {
    if (e)
      spdlog::error("http: accept loop ended with an exception");
  });
  for (unsigned i = 0; i < srv.opts.io_threads; ++i)
    srv.threads.emplace_back([&srv] {
      for (;;) {
        try {
          srv.ioc.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("http: io thread caught: {}", e.what());
        }
      }
    });
  spdlog::info("http: listening on {}:{} ({}) with {} io thread(s)", srv.opts.host, srv.port,
               srv.tls ? "https" : "http", srv.opts.io_threads);
  return std::unique_ptr<server>(new server(std::move(p)));
}

uint16_t server::port() const noexcept { return impl_->port; }

std::string_view server::scheme() const noexcept { return impl_->tls ? "https" : "http"; }

void server::stop() {
  std::lock_guard lock{impl_->stop_mutex};
  if (impl_->stopped)
    return;
  impl_->stopped = true;
  impl_->detach_all();
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    if (t.joinable())
      t.join();
  impl_->threads.clear();
  beast::error_code ec;
  impl_->acceptor.close(ec);
}

} // namespace dynamo::http
