#include "planes/http_client/http_client.hpp"

#include <utility> // before asio: g++ 12 + Boost 1.74 coroutine fix

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <limits>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace dynamo::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

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

namespace {

/// How a connection the server closed fails a request written to it.
bool closed_by_peer(const beast::error_code& ec) {
  return ec == asio::error::eof || ec == bhttp::error::end_of_stream || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe;
}

} // namespace

struct http_client::impl : std::enable_shared_from_this<impl> {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  std::vector<std::thread> threads;
  std::string host;
  uint16_t port;
  std::mutex mtx;
  std::vector<std::unique_ptr<beast::tcp_stream>> idle;
  std::atomic<uint64_t> opened{0};

  impl(std::string h, uint16_t p) : host(std::move(h)), port(p) {}

  /// A pooled connection the server has not closed meanwhile (one it closed
  /// reads as readable: end of stream), or null.
  std::unique_ptr<beast::tcp_stream> take_idle() {
    std::lock_guard lk{mtx};
    while (!idle.empty()) {
      auto s = std::move(idle.back());
      idle.pop_back();
      pollfd p{s->socket().native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 0) == 0)
        return s;
    }
    return nullptr;
  }

  void give_back(std::unique_ptr<beast::tcp_stream> s) {
    std::lock_guard lk{mtx};
    idle.push_back(std::move(s));
  }

  asio::awaitable<std::unique_ptr<beast::tcp_stream>> connect(beast::error_code& ec) {
    tcp::resolver resolver{io};
    auto results = co_await resolver.async_resolve(host, std::to_string(port),
                                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return nullptr;
    auto s = std::make_unique<beast::tcp_stream>(io);
    s->expires_after(std::chrono::seconds(10));
    co_await s->async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return nullptr;
    s->socket().set_option(tcp::no_delay(true), ec);
    ec = {};
    opened.fetch_add(1, std::memory_order_relaxed);
    co_return s;
  }

  // Sends the request on `s` and streams the response; false + ec on failure.
  // `answered`: the response's headers arrived (the server took the request).
  asio::awaitable<bool> exchange(beast::tcp_stream& s, const client_request& req, client_callbacks& cb,
                                 bool& keep_alive, bool& answered, beast::error_code& ec) {
    bhttp::request<bhttp::string_body> msg{req.method == "GET" ? bhttp::verb::get : bhttp::verb::post,
                                           req.target, 11};
    msg.set(bhttp::field::host, host);
    msg.set(bhttp::field::user_agent, "dynamo-http-client");
    if (req.method != "GET") {
      msg.set(bhttp::field::content_type, req.content_type);
      msg.body() = req.body;
    }
    msg.keep_alive(true);
    msg.prepare_payload();
    s.expires_never();
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

  // One exchange on `s`, visible to the request's cancel token meanwhile.
  asio::awaitable<bool> attempt(beast::tcp_stream* s, const client_request& req, client_callbacks& cb,
                                bool& keep_alive, bool& answered, beast::error_code& ec) {
    if (!s)
      co_return false;
    if (req.cancel && !req.cancel->attach(s->socket().native_handle()))
      co_return false;
    bool ok = co_await exchange(*s, req, cb, keep_alive, answered, ec);
    if (req.cancel)
      req.cancel->detach();
    co_return ok;
  }

  asio::awaitable<void> run(client_request req, client_callbacks cb) {
    auto self = shared_from_this();
    auto cancelled = [&req] { return req.cancel && req.cancel->cancelled(); };
    beast::error_code ec;
    bool reused = true;
    auto s = take_idle();
    if (!s) {
      reused = false;
      s = co_await connect(ec);
    }
    bool keep_alive = false;
    bool answered = false;
    bool ok = co_await attempt(s.get(), req, cb, keep_alive, answered, ec);
    if (!ok && reused && !answered && !cancelled() && closed_by_peer(ec)) {
      // The server closed the pooled connection as the request went out (a
      // race take_idle()'s check cannot see): it never answered, so the
      // request goes once more on a fresh connection.
      ec = {};
      s = co_await connect(ec);
      ok = co_await attempt(s.get(), req, cb, keep_alive, answered, ec);
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

http_client::http_client(std::string host, uint16_t port, unsigned io_threads)
  : impl_(std::make_shared<impl>(std::move(host), port)) {
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
  start(std::move(req), std::move(cb));
  if (fut.wait_for(timeout) != std::future_status::ready)
    return make_error(errc::timeout, "http request timed out");
  return fut.get();
}

uint64_t http_client::connections_opened() const noexcept {
  return impl_->opened.load(std::memory_order_relaxed);
}

} // namespace dynamo::http
