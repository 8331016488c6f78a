// Incremental parser for text/event-stream bodies (what OpenAI streaming
// responses are): feed arbitrary byte pieces, get complete events out.
// Lines end with LF, CRLF or a bare CR, as the SSE spec allows.
// One instance per stream; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dynamo::bench {

struct sse_event {
  std::string event; ///< "event:" field, empty for the default "message"
  std::string data;  ///< "data:" lines joined by '\n'
};

class sse_parser {
public:
  /// Appends bytes; returns the events completed by them (blank-line terminated).
  [[nodiscard]] std::vector<sse_event> feed(std::string_view bytes);

private:
  void on_line(std::string_view line, std::vector<sse_event>& out);

  std::string buffer_;
  sse_event current_;
  bool has_field_ = false;
  size_t data_lines_ = 0; ///< "data:" lines of the current event
  bool skip_lf_ = false;  ///< the last piece ended in CR: drop a leading LF

};

} // namespace dynamo::bench
