#include "runtime/bench/sse_parser.hpp"

namespace dynamo::bench {

std::vector<sse_event> sse_parser::feed(std::string_view bytes) {
  std::vector<sse_event> out;
  // A CR that ended the previous piece may be the first half of a CRLF.
  if (skip_lf_ && !bytes.empty()) {
    if (bytes.front() == '\n')
      bytes.remove_prefix(1);
    skip_lf_ = false;
  }
  buffer_.append(bytes);
  size_t start = 0;
  for (;;) {
    // CR, LF and CRLF all end a line.
    auto end = buffer_.find_first_of("\r\n", start);
    if (end == std::string::npos)
      break;
    std::string_view line(buffer_.data() + start, end - start);
    start = end + 1;
    if (buffer_[end] == '\r') {
      if (start < buffer_.size()) {
        if (buffer_[start] == '\n')
          ++start;
      } else {
        skip_lf_ = true;
      }
    }
    on_line(line, out);
  }
  buffer_.erase(0, start);
  return out;
}

void sse_parser::on_line(std::string_view line, std::vector<sse_event>& out) {
  if (line.empty()) {
    if (has_field_)
      out.push_back(std::move(current_));
    current_ = {};
    has_field_ = false;
    data_lines_ = 0;
    return;
  }
  if (line.front() == ':')
    return; // comment
  auto colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ')
    value.remove_prefix(1);
  if (field == "data") {
    // Lines join with LF, empty ones included ("data:\ndata: x" is "\nx").
    if (data_lines_++ > 0)
      current_.data += '\n';
    current_.data.append(value);
    has_field_ = true;
  } else if (field == "event") {
    current_.event.assign(value);
    has_field_ = true;
  }
}

} // namespace dynamo::bench
