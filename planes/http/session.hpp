// Internal to planes/http: one TCP connection, plain (beast::tcp_stream) or
// TLS (tls_stream: a handshake first, close_notify last). A coroutine on the
// connection's strand reads requests, routes them, and writes what each
// request's exchange queues; while a response is pending it watches the
// socket for EOF so that a vanished client is noticed without a write.
// Everything here runs on the strand, except wake() posts from the exchange.
#pragma once

#include <utility> // before Asio: Boost 1.74 coroutines need std::exchange under g++ 12

#include "planes/http/exchange.hpp"
#include "planes/http/parse.hpp"
#include "planes/http/server.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace dynamo::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

/// The server's state, shared by the accept loop and all sessions.
class server::impl {
public:
  impl(server_options o, router r)
    : opts(std::move(o)), routes(std::move(r)),
      ioc(static_cast<int>(opts.io_threads)), acceptor(ioc) {}

  /// Registers an in-flight exchange so that stop() can detach it; false
  /// once stopping (the caller must then drop the request).
  [[nodiscard]] bool track(const std::shared_ptr<detail::exchange>& ex);
  void untrack(const detail::exchange* ex);
  /// Detaches every in-flight exchange (fires their disconnect callbacks).
  void detach_all();
  [[nodiscard]] std::string error_body(unsigned status, std::string_view message) const;

  server_options opts;
  router routes;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::optional<net::ssl::context> tls; ///< set when serving HTTPS
  std::vector<std::thread> threads;
  uint16_t port = 0;
  std::mutex stop_mutex;
  bool stopped = false;

private:
  std::mutex live_mutex_;
  bool detached_all_ = false; ///< set by detach_all: nothing is tracked afterwards
  std::unordered_map<const detail::exchange*, std::weak_ptr<detail::exchange>> live_;
};

/// Stream: beast::tcp_stream or tls_stream (both instantiated in session.cpp).
template <class Stream>
class session : public std::enable_shared_from_this<session<Stream>> {
public:
  static constexpr bool is_tls = !std::is_same_v<Stream, beast::tcp_stream>;

  session(tcp::socket socket, server::impl& srv);

  /// Serves requests until the connection closes.
  [[nodiscard]] net::awaitable<void> run();
  [[nodiscard]] net::any_io_executor executor() { return stream_.get_executor(); }

private:
  enum class read_result { ok, close };
  [[nodiscard]] net::awaitable<read_result> read_request(bhttp::request_parser<bhttp::string_body>& p);
  [[nodiscard]] net::awaitable<bool> write_error(unsigned status, std::string_view message,
                                                 bool keep_alive, std::string_view allow = {});
  [[nodiscard]] net::awaitable<bool> serve(request req, const handler& h, bool keep_alive);
  [[nodiscard]] net::awaitable<bool> drive(const std::shared_ptr<detail::exchange>& ex,
                                           bool keep_alive);
  [[nodiscard]] net::awaitable<bool> write_full(detail::full_response& r, bool keep_alive);
  [[nodiscard]] net::awaitable<bool> write_stream_start(detail::stream_start& s, bool keep_alive);
  [[nodiscard]] net::awaitable<bool> write_stream_data(const std::string& text);
  [[nodiscard]] net::awaitable<bool> write_stream_end();
  [[nodiscard]] net::awaitable<bool> handshake();
  [[nodiscard]] net::awaitable<void> close();
  [[nodiscard]] tcp::socket& socket() { return beast::get_lowest_layer(stream_).socket(); }
  [[nodiscard]] beast::tcp_stream& tcp_layer() { return beast::get_lowest_layer(stream_); }

  void wake() { signal_.cancel(); }
  void watch(const std::shared_ptr<detail::exchange>& ex);
  void on_readable(const std::shared_ptr<detail::exchange>& ex, uint64_t gen, beast::error_code ec);
  void recheck_later(const std::shared_ptr<detail::exchange>& ex, uint64_t gen);
  void unwatch();

  Stream stream_;
  beast::flat_buffer buffer_;
  net::steady_timer signal_;
  net::steady_timer recheck_; ///< TLS: looks for EOF behind unread records
  server::impl& srv_;
  std::string remote_;
  unsigned version_ = 11; ///< HTTP version of the current request
  uint64_t watch_gen_ = 0;
  bool watching_ = false;
};

extern template class session<beast::tcp_stream>;
extern template class session<tls_stream>;

} // namespace dynamo::http
