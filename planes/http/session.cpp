#include "planes/http/session.hpp"

#include <spdlog/spdlog.h>

#include <poll.h>

namespace dynamo::http {

namespace {

constexpr size_t max_pipelined_bytes = 1u << 20; // stop watching beyond this
constexpr size_t drain_limit = 1u << 20;         // bytes read after shutdown, before close

constexpr auto tls_recheck = std::chrono::milliseconds(100); // EOF behind unread TLS records

auto awaitable_ec(beast::error_code& ec) { return net::redirect_error(net::use_awaitable, ec); }

template <class Stream>
Stream open_stream(tcp::socket&& socket, server::impl& srv) {
  if constexpr (std::is_same_v<Stream, beast::tcp_stream>)
    return Stream(std::move(socket));
  else
    return Stream(std::move(socket), *srv.tls);
}

} // namespace

template <class Stream>
session<Stream>::session(tcp::socket socket, server::impl& srv)
  : stream_(open_stream<Stream>(std::move(socket), srv)), signal_(stream_.get_executor()),
    recheck_(stream_.get_executor()), srv_(srv) {
  beast::error_code ec;
  auto ep = this->socket().remote_endpoint(ec);
  if (!ec)
    remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  // Synchronous reads in on_readable must never block; async operations are unaffected.
  this->socket().non_blocking(true, ec);
  this->socket().set_option(tcp::no_delay(true), ec);
}

template <class Stream>
net::awaitable<bool> session<Stream>::handshake() {
  if constexpr (is_tls) {
    beast::error_code ec;
    tcp_layer().expires_after(srv_.opts.handshake_timeout);
    co_await stream_.async_handshake(net::ssl::stream_base::server, awaitable_ec(ec));
    if (ec) {
      // A plaintext client, a client that distrusts our certificate (or has
      // none we accept), or one too slow: only this connection ends.
      spdlog::debug("http: TLS handshake with {} failed: {}", remote_, ec.message());
      tcp_layer().close();
      co_return false;
    }
  }
  co_return true;
}

template <class Stream>
net::awaitable<void> session<Stream>::run() {
  if (!co_await handshake())
    co_return;
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    limit_parser(parser, srv_.opts);
    if (co_await read_request(parser) == read_result::close)
      break;
    auto msg = parser.release();
    const bool keep_alive = msg.keep_alive();
    version_ = msg.version();
    auto req = to_request(msg, remote_);
    auto m = srv_.routes.match(req.method, req.path);
    bool ok;
    if (!m.found) {
      if (m.path_known)
        ok = co_await write_error(405, "Method " + req.method + " is not allowed for " + req.path,
                                  keep_alive, m.allow);
      else
        ok = co_await write_error(404, "No route for " + req.path, keep_alive);
    } else {
      ok = co_await serve(std::move(req), *m.found, keep_alive);
    }
    if (!ok || !keep_alive)
      break;
  }
  co_await close();
}

template <class Stream>
net::awaitable<typename session<Stream>::read_result>
session<Stream>::read_request(bhttp::request_parser<bhttp::string_body>& parser) {
  beast::error_code ec;
  tcp_layer().expires_after(srv_.opts.idle_timeout);
  co_await bhttp::async_read_header(stream_, buffer_, parser, awaitable_ec(ec));
  if (!ec && !parser.is_done()) {
    auto& hdr = parser.get();
    if (beast::iequals(hdr[bhttp::field::expect], "100-continue")) {
      bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, hdr.version()};
      tcp_layer().expires_after(srv_.opts.write_timeout);
      co_await bhttp::async_write(stream_, cont, awaitable_ec(ec));
    }
    if (!ec) {
      tcp_layer().expires_after(srv_.opts.read_timeout);
      co_await bhttp::async_read(stream_, buffer_, parser, awaitable_ec(ec));
    }
  }
  if (!ec)
    co_return read_result::ok;
  const auto status = read_error_status(ec);
  if (status == 413u)
    (void)co_await write_error(413, "The request body exceeds " +
                                      std::to_string(srv_.opts.body_limit) + " bytes", false);
  else if (status == 431u)
    (void)co_await write_error(431, "The request headers are too large", false);
  else if (status)
    (void)co_await write_error(400, "Malformed HTTP request: " + ec.message(), false);
  // EOF, reset or timeout: nobody to answer.
  co_return read_result::close;
}

template <class Stream>
net::awaitable<bool> session<Stream>::write_error(unsigned status, std::string_view message,
                                          bool keep_alive, std::string_view allow) {
  detail::full_response r{status, "application/json", srv_.error_body(status, message), {}};
  if (!allow.empty())
    r.headers.push_back({"Allow", std::string{allow}});
  co_return co_await write_full(r, keep_alive);
}

template <class Stream>
net::awaitable<bool> session<Stream>::serve(request req, const handler& h, bool keep_alive) {
  std::weak_ptr<session> weak = this->shared_from_this();
  auto ex = std::make_shared<detail::exchange>([weak] {
    if (auto s = weak.lock())
      net::post(s->executor(), [s] { s->wake(); });
  });
  if (!srv_.track(ex)) { // the server is stopping: no new work
    ex->detach();
    co_return false;
  }
  try {
    h(std::move(req), std::make_shared<http_responder>(ex));
  } catch (const std::exception& e) {
    spdlog::error("http: handler threw: {}", e.what());
  } catch (...) {
    spdlog::error("http: handler threw a non-exception");
  }
  // A responder the handler dropped without answering has queued `abandoned`.
  bool ok = co_await drive(ex, keep_alive);
  srv_.untrack(ex.get());
  co_return ok;
}

template <class Stream>
net::awaitable<bool> session<Stream>::drive(const std::shared_ptr<detail::exchange>& ex, bool keep_alive) {
  watch(ex);
  bool streaming = false;
  for (;;) {
    auto actions = ex->take();
    if (actions.empty()) {
      if (ex->gone())
        break;
      signal_.expires_at(net::steady_timer::time_point::max());
      beast::error_code ec;
      co_await signal_.async_wait(awaitable_ec(ec));
      continue;
    }
    std::string batch; // consecutive events go out as one chunk
    for (size_t i = 0; i < actions.size(); ++i) {
      auto& a = actions[i];
      if (ex->gone())
        break;
      bool ok = true;
      if (auto* d = std::get_if<detail::stream_data>(&a)) {
        batch += d->text;
        bool next_is_data = i + 1 < actions.size() &&
                            std::holds_alternative<detail::stream_data>(actions[i + 1]);
        if (!next_is_data)
          ok = co_await write_stream_data(std::exchange(batch, {}));
      } else if (auto* r = std::get_if<detail::full_response>(&a)) {
        // The last write decides: stop watching so a client that reads the
        // response and leaves at once is not reported as gone.
        unwatch();
        ok = co_await write_full(*r, keep_alive);
        if (ok) {
          ex->mark_complete();
          co_return true;
        }
      } else if (auto* s = std::get_if<detail::stream_start>(&a)) {
        streaming = true;
        ok = co_await write_stream_start(*s, keep_alive);
      } else if (std::holds_alternative<detail::stream_end>(a)) {
        unwatch();
        ok = co_await write_stream_end();
        if (ok) {
          ex->mark_complete();
          co_return version_ >= 11; // HTTP/1.0 streams end by closing
        }
      } else { // abandoned
        ex->mark_complete();
        unwatch();
        if (streaming) {
          spdlog::warn("http: stream to {} abandoned by its handler; closing", remote_);
          co_return false;
        }
        spdlog::error("http: request from {} was never answered by its handler", remote_);
        co_return co_await write_error(500, "The request was not answered", keep_alive);
      }
      if (!ok) {
        ex->mark_gone();
        break;
      }
    }
  }
  unwatch();
  ex->detach();
  co_return false;
}

template <class Stream>
net::awaitable<bool> session<Stream>::write_full(detail::full_response& r, bool keep_alive) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(r.status), version_};
  if (r.status == 499) // not in Beast's table (nginx's "client closed request")
    res.reason("Client Closed Request");
  res.set(bhttp::field::content_type, r.content_type);
  for (const auto& h : r.headers)
    res.set(h.name, h.value);
  res.keep_alive(keep_alive);
  res.body() = std::move(r.body);
  res.prepare_payload();
  beast::error_code ec;
  tcp_layer().expires_after(srv_.opts.write_timeout);
  co_await bhttp::async_write(stream_, res, awaitable_ec(ec));
  co_return !ec;
}

template <class Stream>
net::awaitable<bool> session<Stream>::write_stream_start(detail::stream_start& s, bool keep_alive) {
  bhttp::response<bhttp::empty_body> res{bhttp::status::ok, version_};
  res.set(bhttp::field::content_type, "text/event-stream");
  res.set(bhttp::field::cache_control, "no-cache");
  for (const auto& h : s.headers)
    res.set(h.name, h.value);
  if (version_ >= 11) {
    res.keep_alive(keep_alive);
    res.chunked(true);
  } else {
    res.keep_alive(false); // HTTP/1.0 has no chunking: the stream ends with the connection
  }
  bhttp::response_serializer<bhttp::empty_body> sr{res};
  beast::error_code ec;
  tcp_layer().expires_after(srv_.opts.write_timeout);
  co_await bhttp::async_write_header(stream_, sr, awaitable_ec(ec));
  co_return !ec;
}

template <class Stream>
net::awaitable<bool> session<Stream>::write_stream_data(const std::string& text) {
  beast::error_code ec;
  tcp_layer().expires_after(srv_.opts.write_timeout);
  if (version_ >= 11)
    co_await net::async_write(stream_, bhttp::make_chunk(net::buffer(text)), awaitable_ec(ec));
  else
    co_await net::async_write(stream_, net::buffer(text), awaitable_ec(ec));
  co_return !ec;
}

template <class Stream>
net::awaitable<bool> session<Stream>::write_stream_end() {
  if (version_ < 11)
    co_return true;
  beast::error_code ec;
  tcp_layer().expires_after(srv_.opts.write_timeout);
  co_await net::async_write(stream_, bhttp::make_chunk_last(), awaitable_ec(ec));
  co_return !ec;
}

template <class Stream>
net::awaitable<void> session<Stream>::close() {
  beast::error_code ec;
  if constexpr (is_tls) {
    // Our close_notify, then the client's, its EOF, or a second's wait.
    tcp_layer().expires_after(std::chrono::seconds(1));
    co_await stream_.async_shutdown(awaitable_ec(ec));
    tcp_layer().close();
  } else {
    socket().shutdown(tcp::socket::shutdown_send, ec);
    // Read what the client still sends, so that closing does not reset the
    // connection before it has read our last response (e.g. after a 413).
    tcp_layer().expires_after(std::chrono::seconds(1));
    std::array<char, 4096> sink;
    size_t total = 0;
    while (!ec && total < drain_limit)
      total += co_await stream_.async_read_some(net::buffer(sink), awaitable_ec(ec));
    stream_.close();
  }
}

template <class Stream>
void session<Stream>::watch(const std::shared_ptr<detail::exchange>& ex) {
  watching_ = true;
  const uint64_t gen = ++watch_gen_;
  auto self = this->shared_from_this();
  socket().async_wait(
    tcp::socket::wait_read,
    net::bind_executor(executor(), [self, ex, gen](beast::error_code ec) {
      self->on_readable(ex, gen, ec);
    }));
}

template <class Stream>
void session<Stream>::on_readable(const std::shared_ptr<detail::exchange>& ex, uint64_t gen,
                          beast::error_code ec) {
  if (!watching_ || gen != watch_gen_ || ec == net::error::operation_aborted)
    return;
  if constexpr (is_tls) {
    // Encrypted records cannot be read past the TLS engine: they stay in the
    // socket for the next request. A peer that has closed (its FIN, maybe
    // behind a close_notify) is gone; otherwise look again a little later.
    pollfd p{socket().native_handle(), POLLRDHUP, 0};
    if (!ec && ::poll(&p, 1, 0) >= 0 && !(p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      recheck_later(ex, gen);
      return;
    }
  } else if (!ec) {
    // Pipelined bytes belong to the next request: keep them in the read buffer.
    auto space = buffer_.prepare(4096);
    size_t n = socket().read_some(space, ec);
    if (!ec) {
      buffer_.commit(n);
      if (buffer_.size() < max_pipelined_bytes)
        watch(ex);
      return;
    }
    if (ec == net::error::would_block || ec == net::error::try_again) {
      watch(ex);
      return;
    }
  }
  // EOF or a socket error while the response is pending: the client is gone.
  watching_ = false;
  ex->mark_gone();
  wake();
}

template <class Stream>
void session<Stream>::recheck_later(const std::shared_ptr<detail::exchange>& ex, uint64_t gen) {
  recheck_.expires_after(tls_recheck);
  recheck_.async_wait(net::bind_executor(executor(), [self = this->shared_from_this(), ex,
                                                      gen](beast::error_code ec) {
    if (!ec)
      self->on_readable(ex, gen, {});
  }));
}

template <class Stream>
void session<Stream>::unwatch() {
  if (!watching_)
    return;
  watching_ = false;
  ++watch_gen_;
  beast::error_code ec;
  socket().cancel(ec);
  if constexpr (is_tls)
    recheck_.cancel();
}

template class session<beast::tcp_stream>;
template class session<tls_stream>;

} // namespace dynamo::http
