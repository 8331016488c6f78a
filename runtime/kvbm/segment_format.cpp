#include "runtime/kvbm/segment_format.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <tuple>

namespace dynamo::kvbm {

namespace {

template <class Header>
uint64_t header_checksum_of(const Header& h) noexcept {
  return XXH3_64bits(&h, offsetof(Header, header_checksum));
}

} // namespace

const char* to_string(read_status s) noexcept {
  switch (s) {
    case read_status::ok: return "ok";
    case read_status::missing: return "missing";
    case read_status::truncated: return "truncated";
    case read_status::corrupt: return "corrupt";
  }
  return "unknown";
}

uint64_t block_checksum(std::span<const std::byte> bytes) noexcept {
  return XXH3_64bits(bytes.data(), bytes.size());
}

segment_header make_segment_header(uint64_t tag, uint64_t segment_id) noexcept {
  segment_header h;
  h.tag = tag;
  h.segment_id = segment_id;
  h.header_checksum = header_checksum_of(h);
  return h;
}

bool valid(const segment_header& h) noexcept {
  return h.magic == segment_header::magic_value && h.version == segment_header::version_value &&
         h.header_checksum == header_checksum_of(h);
}

record_header make_record_header(uint64_t hash, std::optional<uint64_t> parent, uint64_t tokens_hash,
                                 std::span<const std::byte> payload) noexcept {
  record_header h;
  h.sequence_hash = hash;
  if (parent) {
    h.flags |= record_header::flag_parent;
    h.parent_hash = *parent;
  }
  h.tokens_hash = tokens_hash;
  h.length = payload.size();
  h.checksum = block_checksum(payload);
  h.header_checksum = header_checksum_of(h);
  return h;
}

bool valid(const record_header& h) noexcept {
  return h.magic == record_header::magic_value && h.header_checksum == header_checksum_of(h);
}

read_status verify(const record_header& h, uint64_t hash, std::span<const std::byte> payload) noexcept {
  if (!valid(h) || h.sequence_hash != hash || h.length != payload.size() || block_checksum(payload) != h.checksum)
    return read_status::corrupt;
  return read_status::ok;
}

segment_footer make_segment_footer(uint64_t segment_id, uint64_t records_end,
                                   std::span<const record_header> records) noexcept {
  segment_footer f;
  f.segment_id = segment_id;
  f.records_end = records_end;
  f.count = records.size();
  f.entries_checksum = XXH3_64bits(records.data(), records.size_bytes());
  f.header_checksum = header_checksum_of(f);
  return f;
}

std::optional<std::vector<record_header>> parse_segment_footer(std::span<const std::byte> tail, uint64_t file_size,
                                                               uint64_t segment_id) {
  segment_footer last;
  if (tail.size() < sizeof last || tail.size() > file_size)
    return std::nullopt;
  std::memcpy(&last, tail.data() + tail.size() - sizeof last, sizeof last);
  if (last.magic != segment_footer::magic_value || last.version != 1 || last.header_checksum != header_checksum_of(last) ||
      last.segment_id != segment_id || last.count > file_size / sizeof(record_header) ||
      last.records_end < sizeof(segment_header) || last.records_end > file_size ||
      file_size - last.records_end != last.bytes() || tail.size() < last.bytes())
    return std::nullopt;
  const std::byte* first = tail.data() + tail.size() - last.bytes();
  if (std::memcmp(first, &last, sizeof last) != 0)
    return std::nullopt;
  std::vector<record_header> records(last.count);
  std::memcpy(records.data(), first + sizeof last, records.size() * sizeof(record_header));
  if (XXH3_64bits(records.data(), records.size() * sizeof(record_header)) != last.entries_checksum)
    return std::nullopt;
  uint64_t at = sizeof(segment_header);
  for (const record_header& h : records) {
    if (!valid(h) || last.records_end - at < sizeof h || h.length > last.records_end - at - sizeof h)
      return std::nullopt;
    at += sizeof h + h.length;
  }
  if (at != last.records_end)
    return std::nullopt;
  return records;
}

namespace {

struct live_index_header {
  uint32_t magic = live_index::magic_value;
  uint32_t version = 1;
  uint64_t tag = 0;
  uint64_t segments = 0;
  uint64_t records = 0;
  uint64_t body_checksum = 0;   ///< XXH3-64 of the segments and records after it
  uint64_t header_checksum = 0; ///< XXH3-64 of the 40 bytes before it
};
static_assert(sizeof(live_index_header) == 48);

constexpr uint64_t segment_entry = sizeof(live_index::segment_end);
constexpr uint64_t record_entry = sizeof(live_index::record_at);

} // namespace

std::vector<std::byte> encode_live_index(const live_index& index) {
  const uint64_t seg_bytes = index.segments.size() * segment_entry;
  const uint64_t rec_bytes = index.records.size() * record_entry;
  std::vector<std::byte> out(sizeof(live_index_header) + seg_bytes + rec_bytes);
  std::byte* body = out.data() + sizeof(live_index_header);
  if (seg_bytes != 0)
    std::memcpy(body, index.segments.data(), seg_bytes);
  if (rec_bytes != 0)
    std::memcpy(body + seg_bytes, index.records.data(), rec_bytes);
  live_index_header h;
  h.tag = index.tag;
  h.segments = index.segments.size();
  h.records = index.records.size();
  h.body_checksum = XXH3_64bits(body, seg_bytes + rec_bytes);
  h.header_checksum = header_checksum_of(h);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

std::optional<live_index> parse_live_index(std::span<const std::byte> bytes) {
  live_index_header h;
  if (bytes.size() < sizeof h)
    return std::nullopt;
  std::memcpy(&h, bytes.data(), sizeof h);
  const uint64_t body = bytes.size() - sizeof h;
  if (h.magic != live_index::magic_value || h.version != 1 || h.header_checksum != header_checksum_of(h) ||
      h.segments > body / segment_entry || h.records > body / record_entry ||
      h.segments * segment_entry + h.records * record_entry != body ||
      XXH3_64bits(bytes.data() + sizeof h, body) != h.body_checksum)
    return std::nullopt;
  live_index out;
  out.tag = h.tag;
  out.segments.resize(h.segments);
  out.records.resize(h.records);
  const std::byte* at = bytes.data() + sizeof h;
  if (h.segments != 0)
    std::memcpy(out.segments.data(), at, h.segments * segment_entry);
  if (h.records != 0)
    std::memcpy(out.records.data(), at + h.segments * segment_entry, h.records * record_entry);
  return out;
}

uint64_t segment_tag(std::span<const char> identity, uint64_t block_bytes) noexcept {
  return XXH3_64bits_withSeed(identity.data(), identity.size(), block_bytes);
}

std::vector<read_run> plan_reads(std::span<const record_span> records, std::vector<uint32_t>& items,
                                 uint64_t max_bytes, uint32_t max_records) {
  std::sort(items.begin(), items.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(records[a].segment, records[a].offset) < std::tie(records[b].segment, records[b].offset);
  });
  std::vector<read_run> runs;
  uint64_t run_bytes = 0;
  for (uint32_t k = 0; k < items.size(); ++k) {
    const record_span& r = records[items[k]];
    const uint64_t bytes = r.end() - r.offset;
    if (!runs.empty()) {
      read_run& last = runs.back();
      const record_span& prev = records[items[k - 1]];
      if (prev.segment == r.segment && prev.end() == r.offset && last.count < max_records &&
          run_bytes + bytes <= max_bytes) {
        ++last.count;
        run_bytes += bytes;
        continue;
      }
    }
    runs.push_back(read_run{k, 1});
    run_bytes = bytes;
  }
  return runs;
}

} // namespace dynamo::kvbm
