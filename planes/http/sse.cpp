#include "planes/http/sse.hpp"

namespace dynamo::http {

std::string format_sse_event(std::string_view data, std::string_view event) {
  std::string out;
  out.reserve(data.size() + event.size() + 16);
  // CR, LF and CRLF all end a line in SSE: a line end inside the event name
  // would inject fields, so the name stops there; data is split on all three.
  event = event.substr(0, event.find_first_of("\r\n"));
  if (!event.empty()) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  size_t start = 0;
  while (true) {
    size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos)
      break;
    start = end + 1;
    if (data[end] == '\r' && start < data.size() && data[start] == '\n')
      ++start;
  }
  out += '\n';
  return out;
}

} // namespace dynamo::http
