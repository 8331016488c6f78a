// libFuzzer target: the byte formats of the KVBM disk tier
// (runtime/kvbm/segment_format.hpp), which a restart reads back from files a
// crash, a full disk or another process may have left in any state. Input: a
// mode byte, then the bytes. Mode 0: a live index (parse, then the parsed
// value must encode to exactly those bytes). Mode 1: a segment's tail, with
// two bytes of extra file length and a segment id first (what the footer
// parse accepts must re-encode to its own bytes and add up to records_end).
// Mode 2: record spans for plan_reads (the runs must cover every record once,
// in order, adjacent and within the limits).
#include "runtime/kvbm/segment_format.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace {

using namespace dynamo::kvbm;

void live(std::span<const std::byte> in) {
  auto index = parse_live_index(in);
  if (!index)
    return;
  const std::vector<std::byte> again = encode_live_index(*index);
  if (again.size() != in.size() || !std::equal(again.begin(), again.end(), in.begin()))
    __builtin_trap();
}

void footer(std::span<const std::byte> in) {
  if (in.size() < 3)
    return;
  const uint64_t extra = (uint64_t(in[0]) << 8) | uint64_t(in[1]);
  const uint64_t id = uint64_t(in[2]);
  const auto tail = in.subspan(3);
  const uint64_t file_size = tail.size() + extra;
  auto headers = parse_segment_footer(tail, file_size, id);
  if (!headers)
    return;
  uint64_t end = sizeof(segment_header);
  for (const record_header& h : *headers) {
    if (!valid(h))
      __builtin_trap();
    end += sizeof h + h.length;
  }
  const segment_footer f = make_segment_footer(id, end, *headers);
  if (file_size != end + f.bytes() || tail.size() < f.bytes())
    __builtin_trap();
  const std::byte* first = tail.data() + tail.size() - f.bytes();
  if (std::memcmp(first, &f, sizeof f) != 0 || std::memcmp(tail.data() + tail.size() - sizeof f, &f, sizeof f) != 0)
    __builtin_trap();
}

void plan(std::span<const std::byte> in) {
  if (in.size() < 2)
    return;
  const uint64_t max_bytes = 64 * (uint64_t(in[0]) + 1);
  const uint32_t max_records = uint32_t(in[1]) % 8 + 1;
  std::vector<record_span> records;
  for (size_t k = 2; k + 3 <= in.size() && records.size() < 256; k += 3) // (segment, offset / 16, length)
    records.push_back(record_span{uint64_t(in[k]) % 4, 16 * uint64_t(in[k + 1]), uint64_t(in[k + 2])});
  std::vector<uint32_t> items(records.size());
  for (uint32_t k = 0; k < items.size(); ++k)
    items[k] = k;
  const std::vector<read_run> runs = plan_reads(records, items, max_bytes, max_records);
  std::vector<uint32_t> seen(items);
  std::sort(seen.begin(), seen.end());
  for (uint32_t k = 0; k < seen.size(); ++k)
    if (seen[k] != k) // items stays a permutation
      __builtin_trap();
  uint32_t next = 0;
  for (const read_run& r : runs) {
    if (r.first != next || r.count == 0 || r.count > max_records)
      __builtin_trap();
    uint64_t bytes = 0;
    for (uint32_t j = r.first; j < r.first + r.count; ++j) {
      const record_span& s = records[items[j]];
      bytes += s.end() - s.offset;
      if (j > r.first && (records[items[j - 1]].segment != s.segment || records[items[j - 1]].end() != s.offset))
        __builtin_trap();
    }
    if (r.count > 1 && bytes > max_bytes)
      __builtin_trap();
    next += r.count;
  }
  if (next != items.size())
    __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const std::span<const std::byte> in{reinterpret_cast<const std::byte*>(data) + 1, size - 1};
  switch (data[0] % 3) {
    case 0: live(in); break;
    case 1: footer(in); break;
    default: plan(in); break;
  }
  return 0;
}
