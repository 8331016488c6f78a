// Other APIs served as translations over chat completions (the Responses API,
// Anthropic Messages): a request is translated to a chat completions body up
// front, and its chat output (the whole body, or the stream's chunks) is
// translated back by a chat_dialect. The request actor owns one per request;
// not thread-safe. Pure: JSON text in, JSON text out.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/openai/error.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::openai {

/// One server-sent event: `event:` name (empty: none) and its data line.
struct sse_event {
  std::string event;
  std::string data;
};

class chat_dialect {
public:
  virtual ~chat_dialect() = default;
  /// A whole chat.completion body -> this API's response body.
  [[nodiscard]] virtual expected<std::string> body(std::string_view chat_completion) = 0;
  /// One streamed chat.completion.chunk -> this API's events (maybe none).
  [[nodiscard]] virtual std::vector<sse_event> push(std::string_view chat_chunk) = 0;
  /// The chat stream ended (instead of its [DONE]): the closing events.
  [[nodiscard]] virtual std::vector<sse_event> finish() = 0;
  /// The body of an error answered before a stream started.
  [[nodiscard]] virtual std::string error_body(const api_error& e) const = 0;
  /// The event that reports an error once the stream has started.
  [[nodiscard]] virtual sse_event stream_error(const api_error& e) = 0;
};

/// A translated request: the chat completions body to serve, whether the
/// client asked for a stream, and the dialect that translates the output.
struct dialect_request {
  std::string chat_body;
  bool stream = false;
  std::unique_ptr<chat_dialect> dialect;
};

} // namespace dynamo::openai
