#include "runtime/kvbm/segment_format.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstddef>
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
