// The HTTP plane's request parsing, apart from the socket: how a Beast parser is
// limited, how a parsed message becomes our `request`, which status answers a
// read error, and parsing a request out of bytes already in memory. Called by
// `session` (one parser per request, on its io thread) and by fuzz/fuzz_http;
// no shared state.
#pragma once

#include "planes/http/limits.hpp"
#include "planes/http/router.hpp"

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::http {

using beast_request = boost::beast::http::request<boost::beast::http::string_body>;
using beast_request_parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

/// Applies the limits to a fresh parser (before its first byte).
void limit_parser(beast_request_parser& parser, const parse_limits& limits);

/// Turns a parsed message into the plane's request (moves the body out).
[[nodiscard]] request to_request(beast_request& msg, const std::string& remote);

/// The status that answers a failed read: 413 (body limit), 431 (header limit),
/// 400 (malformed), or nullopt when nobody is left to answer (EOF, reset, timeout).
[[nodiscard]] std::optional<unsigned> read_error_status(const boost::beast::error_code& ec);

/// Outcome of parsing one request from bytes in memory.
struct parsed {
  std::optional<request> req; ///< the request, when complete
  unsigned status = 0;        ///< with no request: 400/413/431, or 0 when more bytes are needed
  size_t consumed = 0;        ///< bytes of `bytes` the request used
};

/// Parses the first request in `bytes` with the limits the server applies; input
/// arrives in pieces of at most `piece` bytes (0: all at once), as a socket may
/// deliver it.
[[nodiscard]] parsed parse_request(std::string_view bytes, const parse_limits& limits,
                                   size_t piece = 0);

} // namespace dynamo::http
