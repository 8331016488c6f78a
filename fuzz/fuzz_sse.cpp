// libFuzzer target: the SSE writer (planes/http) against the SSE reader the
// benchmarks use (runtime/bench): whatever data and event name the writer is
// given, the reader gets back exactly one event with the same data, and no
// injected field. Input: "event \0 data" (no \0: data only).
#include "planes/http/sse.hpp"
#include "runtime/bench/sse_parser.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto cut = in.find('\0');
  std::string_view event = cut == std::string_view::npos ? std::string_view{} : in.substr(0, cut);
  std::string_view payload = cut == std::string_view::npos ? in : in.substr(cut + 1);
  std::string wire = dynamo::http::format_sse_event(payload, event);
  dynamo::bench::sse_parser parser;
  // Feed in two pieces, split where the input says, to exercise reassembly.
  size_t split = size ? data[0] % (wire.size() + 1) : 0;
  auto events = parser.feed(std::string_view(wire).substr(0, split));
  auto rest = parser.feed(std::string_view(wire).substr(split));
  events.insert(events.end(), rest.begin(), rest.end());
  if (events.size() != 1)
    __builtin_trap();
  // A CR or LF ends a line in SSE: the writer splits data on all three line
  // ends, so the reader rejoins them with LF.
  std::string expect;
  for (size_t i = 0; i < payload.size(); ++i) {
    if (payload[i] == '\r') {
      expect += '\n';
      if (i + 1 < payload.size() && payload[i + 1] == '\n')
        ++i;
    } else {
      expect += payload[i];
    }
  }
  if (events[0].data != expect)
    __builtin_trap();
  // An event name cannot carry a line end (it would inject fields): cut there.
  if (events[0].event != event.substr(0, event.find_first_of("\r\n")))
    __builtin_trap();
  return 0;
}
