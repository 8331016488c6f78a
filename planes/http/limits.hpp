// The HTTP plane's request size limits: one home for the server's options
// (server.hpp) and the parser (parse.hpp). Plain values.
#pragma once

#include <cstddef>

namespace dynamo::http {

struct parse_limits {
  /// Largest request body in bytes (413 beyond). 32 MiB holds a ~1M-token
  /// prompt given as token ids.
  size_t body_limit = 32u << 20;
  size_t header_limit = 64u << 10; ///< bytes of request line + headers (431 beyond)
};

} // namespace dynamo::http
