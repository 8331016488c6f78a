// libFuzzer target: what an etcd server (or anything posing as one) sends the
// etcd discovery backend. The input is read by every unary response parser,
// then cut by the watch-stream splitter at the position the first byte picks;
// each line is parsed as a watch message and applied to a watch view, as is a
// parsed range snapshot.
#include "planes/discovery/etcd_codec.hpp"
#include "planes/discovery/etcd_view.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ec = dynamo::planes::etcd_codec;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ec::parse_header(text);
  (void)ec::parse_created(text);
  (void)ec::parse_grant(text);
  (void)ec::parse_keepalive(text);
  (void)ec::error_text(text);
  dynamo::planes::corrupt_tracker corrupt;
  dynamo::planes::etcd_watch_view view{"/dynamo", corrupt};
  if (auto r = ec::parse_range(text))
    (void)view.reset(*r);
  ec::line_splitter split{size_t{1} << 16};
  std::vector<std::string> lines;
  size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  split.feed(text.substr(0, cut), lines);
  split.feed(text.substr(cut), lines);
  for (auto& line : lines)
    if (auto m = ec::parse_watch_message(line))
      (void)view.apply(*m);
  return 0;
}
