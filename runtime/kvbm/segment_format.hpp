// The on-disk format of the KVBM disk tier (G3) and the pure logic over it:
// segment and record headers, their checksums and checks, and the plan that
// coalesces a job's records into runs of adjacent bytes. No I/O (segment_file
// does it). Plain values and functions: any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dynamo::kvbm {

enum class read_status : uint8_t {
  ok,
  missing,   ///< no such record (its segment is gone)
  truncated, ///< the segment ends inside the record
  corrupt,   ///< wrong magic, hash, length or checksum
};

[[nodiscard]] const char* to_string(read_status s) noexcept;

/// XXH3-64 (seed 0) of `bytes`: the checksum of a record's payload.
[[nodiscard]] uint64_t block_checksum(std::span<const std::byte> bytes) noexcept;

/// A segment file opens with this (little-endian, as every header here).
/// `tag` names what its blocks are KV of (model, layout, block size): a store
/// opening with another tag removes the segment.
struct segment_header {
  static constexpr uint32_t magic_value = 0x53564b44; ///< "DKVS"
  static constexpr uint32_t version_value = 1;
  uint32_t magic = magic_value;
  uint32_t version = version_value;
  uint64_t tag = 0;
  uint64_t segment_id = 0;
  uint64_t header_checksum = 0; ///< XXH3-64 of the 24 bytes before it
};
static_assert(sizeof(segment_header) == 32);

/// One block in a segment: this header, then `length` payload bytes. The
/// header's own checksum lets a scan trust it without reading the payload; the
/// payload's is checked when it is read.
struct record_header {
  static constexpr uint32_t magic_value = 0x52564b44; ///< "DKVR"
  static constexpr uint32_t flag_parent = 1;          ///< parent_hash is set
  uint32_t magic = magic_value;
  uint32_t flags = 0;
  uint64_t sequence_hash = 0;
  uint64_t parent_hash = 0; ///< the block before it in its prompt (flag_parent)
  uint64_t tokens_hash = 0; ///< the block's local hash (what the router indexes)
  uint64_t length = 0;      ///< payload bytes
  uint64_t checksum = 0;    ///< XXH3-64 of the payload
  uint64_t reserved = 0;
  uint64_t header_checksum = 0; ///< XXH3-64 of the 56 bytes before it
  [[nodiscard]] std::optional<uint64_t> parent() const noexcept {
    return (flags & flag_parent) != 0 ? std::optional{parent_hash} : std::nullopt;
  }
};
static_assert(sizeof(record_header) == 64);

/// A sealed segment's index, after its last record: this footer, a copy of
/// each record's header in file order, and the footer again at the file's
/// very end, so that one read of the tail loads the index (the records' offsets
/// follow from their lengths). The first copy stops a scan at the last record
/// (its magic is not a record's); a footer missing, torn or wrong in any byte
/// sends the store back to scanning the record headers.
struct segment_footer {
  static constexpr uint32_t magic_value = 0x46564b44; ///< "DKVF"
  uint32_t magic = magic_value;
  uint32_t version = 1;
  uint64_t segment_id = 0;
  uint64_t records_end = 0;      ///< where the first copy starts: after the last record
  uint64_t count = 0;            ///< record headers listed
  uint64_t entries_checksum = 0; ///< XXH3-64 of the listed headers
  uint64_t header_checksum = 0;  ///< XXH3-64 of the 40 bytes before it
  /// The footer's bytes: two copies and the headers between them.
  [[nodiscard]] uint64_t bytes() const noexcept { return 2 * sizeof(segment_footer) + count * sizeof(record_header); }
};
static_assert(sizeof(segment_footer) == 48);

[[nodiscard]] segment_header make_segment_header(uint64_t tag, uint64_t segment_id) noexcept;
/// Whether `h` is a well-formed segment header (any tag).
[[nodiscard]] bool valid(const segment_header& h) noexcept;

[[nodiscard]] record_header make_record_header(uint64_t hash, std::optional<uint64_t> parent, uint64_t tokens_hash,
                                               std::span<const std::byte> payload) noexcept;
/// Whether `h` is a well-formed record header (magic, header checksum).
[[nodiscard]] bool valid(const record_header& h) noexcept;
/// Whether a record read back is block `hash` of `payload.size()` bytes, intact.
[[nodiscard]] read_status verify(const record_header& h, uint64_t hash, std::span<const std::byte> payload) noexcept;

[[nodiscard]] segment_footer make_segment_footer(uint64_t segment_id, uint64_t records_end,
                                                std::span<const record_header> records) noexcept;
/// The record headers a segment's footer lists, from `tail`, the last bytes of
/// a file of `file_size` bytes (at least the whole footer): nullopt unless both
/// copies are valid and equal, name `segment_id`, end the file, and the headers
/// are valid with lengths that add up to records_end.
[[nodiscard]] std::optional<std::vector<record_header>>
parse_segment_footer(std::span<const std::byte> tail, uint64_t file_size, uint64_t segment_id);

/// What a store held when it closed cleanly, written next to its segments
/// ("LIVE") and removed by the next open: the records still indexed, in the
/// policy's order (least recently used first, lower priority first), so a
/// restart neither brings back blocks evicted into holes the footers still
/// list nor forgets which blocks were hot. It holds only for the segments it
/// names, each ending where it says; otherwise the footers and scans alone
/// decide, as after a crash.
struct live_index {
  static constexpr uint32_t magic_value = 0x4c564b44; ///< "DKVL"
  struct segment_end {
    uint64_t id = 0;
    uint64_t end = 0; ///< segment_file::end() at close
  };
  struct record_at {
    uint64_t segment = 0;
    uint64_t offset = 0;
    uint32_t priority = 0;
    uint32_t reserved = 0;
  };
  uint64_t tag = 0;
  std::vector<segment_end> segments;
  std::vector<record_at> records; ///< the policy's order, next evicted first
};
static_assert(sizeof(live_index::segment_end) == 16 && sizeof(live_index::record_at) == 24);

/// The file's bytes: a 48-byte header (magic, version, tag, counts, body and
/// header checksums), the segments, the records.
[[nodiscard]] std::vector<std::byte> encode_live_index(const live_index& index);
/// nullopt unless `bytes` is exactly one whole, intact live index.
[[nodiscard]] std::optional<live_index> parse_live_index(std::span<const std::byte> bytes);

/// The store's tag for blocks of `block_bytes` bytes described by `identity`
/// (kvbm_config::disk_tag).
[[nodiscard]] uint64_t segment_tag(std::span<const char> identity, uint64_t block_bytes) noexcept;

/// Where one record lies: `offset` of its header in its segment.
struct record_span {
  uint64_t segment = 0; ///< any key naming the segment
  uint64_t offset = 0;
  uint64_t length = 0;  ///< payload bytes
  [[nodiscard]] uint64_t end() const noexcept { return offset + sizeof(record_header) + length; }
};

/// A read of adjacent records: items[first, first + count) of the sorted order.
struct read_run {
  uint32_t first = 0;
  uint32_t count = 0;
};

/// Sorts `items` (indices into `records`) by (segment, offset) and cuts them
/// into runs of records that follow each other byte for byte in one segment,
/// each at most `max_bytes` (but at least one record) and `max_records` long.
[[nodiscard]] std::vector<read_run> plan_reads(std::span<const record_span> records, std::vector<uint32_t>& items,
                                               uint64_t max_bytes, uint32_t max_records);

} // namespace dynamo::kvbm
