// How a handler answers one HTTP request: once (status, content type, body) or
// as a server-sent-event stream (start_stream, send_event..., finish). Every
// method is thread-safe and returns at once: the bytes are written by the
// connection's io thread. Methods return false when the call is out of order,
// or the client is gone, or the server is stopping.
#pragma once

#include "planes/http/router.hpp"
#include "planes/http/sse.hpp" // format_sse_event

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::http {

namespace detail {
class exchange;
} // namespace detail

class http_responder {
public:
  explicit http_responder(std::shared_ptr<detail::exchange> ex);
  /// An unanswered request gets a 500; an unfinished stream is cut off (the
  /// connection closes), so a handler bug never hangs a client.
  ~http_responder();
  http_responder(const http_responder&) = delete;
  http_responder& operator=(const http_responder&) = delete;

  /// The whole response. Only before anything else was sent.
  bool respond(unsigned status, std::string content_type, std::string body,
               std::vector<header_field> headers = {});

  /// 200 with Content-Type text/event-stream, chunked (HTTP/1.1).
  bool start_stream(std::vector<header_field> headers = {});
  /// One event: "event: <event>\n" when given (cut at its first CR or LF, so a
  /// name cannot inject fields), then each line of `data` (split at LF, CRLF
  /// and bare CR, SSE's line ends) as "data: <line>\n", then "\n". Only after
  /// start_stream.
  bool send_event(std::string_view data, std::string_view event = {});
  /// Ends the stream (the last chunk). Only after start_stream.
  bool finish();

  /// `cb` runs once, on an io thread (or on the caller's thread if the client
  /// is already gone, or on the thread stopping the server), when the client
  /// goes away while the handler still owes (part of) the response, i.e.
  /// before respond(), finish() or the responder's destruction. Detected by a
  /// failed write and by watching the socket for EOF while the response is
  /// pending. A client that half-closes its side after sending counts as gone.
  void on_disconnect(std::function<void()> cb);

  /// True once the client is known to be gone.
  [[nodiscard]] bool client_gone() const;

private:
  std::shared_ptr<detail::exchange> ex_;
};

} // namespace dynamo::http
