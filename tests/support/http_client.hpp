// A small blocking HTTP/1.1 client for tests (Boost.Beast): whole requests,
// raw bytes, and reading a streamed (SSE) body piece by piece. Every read has
// a 10 s socket timeout so a broken server fails a test instead of hanging it.
// One client per thread; not thread-safe.
#pragma once

#include <utility> // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dynamo::test {

struct http_reply {
  unsigned status = 0;
  std::string body;
  std::map<std::string, std::string> headers; ///< lower-case names
  bool keep_alive = false;
  bool chunked = false;

  [[nodiscard]] std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string{} : it->second;
  }
};

class http_client {
public:
  explicit http_client(uint16_t port, const char* host = "127.0.0.1") : socket_(ioc_) {
    namespace net = boost::asio;
    socket_.connect({net::ip::make_address(host), port});
    timeval tv{10, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }

  /// Sends one request (HTTP/1.1, keep-alive) and reads the whole response.
  http_reply request(const std::string& method, const std::string& target,
                     const std::string& body = {},
                     const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    send(method, target, body, headers);
    namespace http = boost::beast::http;
    for (;;) {
      http::response_parser<http::string_body> parser;
      parser.body_limit(1u << 30);
      boost::beast::error_code ec;
      http::read(socket_, buffer_, parser, ec);
      auto reply = to_reply(parser, ec);
      if (reply.status != 100) // skip interim "100 Continue"
        return reply;
    }
  }

  void send(const std::string& method, const std::string& target, const std::string& body = {},
            const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    namespace http = boost::beast::http;
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!body.empty())
      req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers)
      req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(socket_, req);
  }

  /// Starts reading a response: returns once the header is in (body not read).
  http_reply read_header() {
    namespace http = boost::beast::http;
    stream_parser_ = std::make_unique<http::response_parser<http::string_body>>();
    stream_parser_->body_limit(1u << 30);
    boost::beast::error_code ec;
    http::read_header(socket_, buffer_, *stream_parser_, ec);
    return to_reply(*stream_parser_, ec);
  }

  /// After read_header: reads until the body holds `needle` or the message
  /// ends; returns the body read so far.
  std::string read_body_until(const std::string& needle) {
    namespace http = boost::beast::http;
    boost::beast::error_code ec;
    while (!stream_parser_->is_done() &&
           stream_parser_->get().body().find(needle) == std::string::npos) {
      http::read_some(socket_, buffer_, *stream_parser_, ec);
      if (ec)
        break;
    }
    return stream_parser_->get().body();
  }

  /// After read_header: reads to the end of the message.
  std::string read_body_to_end() { return read_body_until("\x01\x02never\x03"); }
  [[nodiscard]] bool body_done() const { return stream_parser_ && stream_parser_->is_done(); }

  /// Writes raw bytes and reads everything until the server closes (or 10 s).
  std::string raw(const std::string& bytes, bool half_close = false) {
    boost::asio::write(socket_, boost::asio::buffer(bytes));
    if (half_close)
      socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send);
    std::string out;
    char tmp[4096];
    boost::system::error_code ec;
    for (;;) {
      size_t n = socket_.read_some(boost::asio::buffer(tmp), ec);
      out.append(tmp, n);
      if (ec)
        break;
    }
    return out;
  }

  /// True when the server has closed the connection (EOF on the next read).
  bool server_closed() {
    char c;
    boost::system::error_code ec;
    socket_.read_some(boost::asio::buffer(&c, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  void close() {
    boost::system::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

private:
  template <class Parser>
  static http_reply to_reply(Parser& parser, const boost::beast::error_code& ec) {
    http_reply r;
    if (ec && !parser.is_header_done())
      return r; // status 0: nothing usable arrived
    const auto& msg = parser.get();
    r.status = msg.result_int();
    r.body = msg.body();
    r.keep_alive = msg.keep_alive();
    r.chunked = msg.chunked();
    for (const auto& f : msg) {
      std::string name{f.name_string()};
      for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = std::string{f.value()};
    }
    return r;
  }

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::unique_ptr<boost::beast::http::response_parser<boost::beast::http::string_body>>
    stream_parser_;
};

/// The `data:` payloads of an SSE body, in order (event names are dropped).
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos)
      break;
    std::string line = body.substr(pos, end - pos);
    if (line.rfind("data: ", 0) == 0)
      out.push_back(line.substr(6));
    pos = end + 1;
  }
  return out;
}

} // namespace dynamo::test
