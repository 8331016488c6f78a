#include "planes/http/parse.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// Built with BOOST_ENABLE_ASSERT_DEBUG_HANDLER (planes/http/CMakeLists.txt): where
// assertions are on (sanitizer and fuzz builds; never with NDEBUG), Boost's
// failed assertions in this plane come here. One is known to be wrong: Boost
// 1.74's Beast asserts n >= 5 in parse_chunk_header, which a client reaches by
// sending a first, final chunk "0\r\n" and then one byte; the code after it
// handles 4 bytes correctly, and Beast dropped the assertion upstream
// (boostorg/beast#2861). Found by fuzz_http; every other assertion aborts.
namespace boost {

void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  if (std::string_view{expr} == "n >= 5" &&
      std::string_view{function}.find("parse_chunk_header") != std::string_view::npos)
    return;
  std::fprintf(stderr, "%s:%ld: %s: Assertion `%s' failed.\n", file, line, function, expr);
  std::abort();
}

void assertion_failed_msg(char const* expr, char const* msg, char const* function,
                          char const* file, long line) {
  std::fprintf(stderr, "%s:%ld: %s: Assertion `%s' failed: %s\n", file, line, function, expr, msg);
  std::abort();
}

} // namespace boost

namespace dynamo::http {

namespace bhttp = boost::beast::http;

void limit_parser(beast_request_parser& parser, const parse_limits& limits) {
  parser.header_limit(static_cast<uint32_t>(std::min<size_t>(limits.header_limit, UINT32_MAX)));
  parser.body_limit(limits.body_limit);
}

request to_request(beast_request& msg, const std::string& remote) {
  request r;
  r.method = std::string{msg.method_string()};
  r.target = std::string{msg.target()};
  auto q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos)
    r.query = r.target.substr(q + 1);
  r.body = std::move(msg.body());
  for (const auto& f : msg)
    r.headers.push_back({std::string{f.name_string()}, std::string{f.value()}});
  r.version = msg.version();
  r.remote = remote;
  return r;
}

std::optional<unsigned> read_error_status(const boost::beast::error_code& ec) {
  if (ec == bhttp::error::body_limit)
    return 413;
  if (ec == bhttp::error::header_limit)
    return 431;
  static const auto& http_category = bhttp::make_error_code(bhttp::error::bad_method).category();
  if (ec.category() == http_category && ec != bhttp::error::end_of_stream &&
      ec != bhttp::error::partial_message && ec != bhttp::error::need_more)
    return 400;
  return std::nullopt;
}

parsed parse_request(std::string_view bytes, const parse_limits& limits, size_t piece) {
  beast_request_parser parser;
  limit_parser(parser, limits);
  parser.eager(true);
  parsed out;
  // Beast's parser wants at least a whole header in one buffer; like a socket
  // read, the window grows by `piece` bytes and the parser consumes what it can.
  size_t used = 0, window = 0;
  while (!parser.is_done()) {
    const size_t step = piece == 0 ? bytes.size() : piece;
    window = std::min(bytes.size(), window + step);
    boost::beast::error_code ec;
    const size_t n =
        parser.put(boost::asio::buffer(bytes.data() + used, window - used), ec);
    used += n;
    if (ec == bhttp::error::need_more) {
      if (window == bytes.size())
        return out; // status 0: the request is incomplete
      continue;
    }
    if (ec) {
      out.status = read_error_status(ec).value_or(400);
      return out;
    }
    if (n == 0 && window == bytes.size() && !parser.is_done())
      return out;
  }
  out.consumed = used;
  auto msg = parser.release();
  out.req = to_request(msg, "");
  return out;
}

} // namespace dynamo::http
