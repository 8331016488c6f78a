#include "runtime/bench/sse_parser.hpp"

namespace dynamo::bench {

std::vector<sse_event> sse_parser::feed(std::string_view bytes) {
  std::vector<sse_event> out;
  buffer_.append(bytes);
  size_t start = 0;
  for (;;) {
    auto nl = buffer_.find('\n', start);
    if (nl == std::string::npos)
      break;
    std::string_view line(buffer_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    start = nl + 1;
    if (line.empty()) {
      if (has_field_)
        out.push_back(std::move(current_));
      current_ = {};
      has_field_ = false;
      continue;
    }
    if (line.front() == ':')
      continue; // comment
    auto colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
    if (field == "data") {
      if (has_field_ && !current_.data.empty())
        current_.data += '\n';
      current_.data.append(value);
      has_field_ = true;
    } else if (field == "event") {
      current_.event.assign(value);
      has_field_ = true;
    }
  }
  buffer_.erase(0, start);
  return out;
}

} // namespace dynamo::bench
