// One segment file of the KVBM disk tier: a segment_header, then records
// appended one after another (segment_format.hpp). Owns the descriptor, which
// stays valid after the file is unlinked, so a read in flight never sees
// another block's bytes. disk_store creates, appends, scans and removes on the
// engine's step thread, and seal it with a footer that lists the records
// (segment_format.hpp) so the next start reads one index, not every record
// header; read()/read_run() run on any thread (pread/preadv at
// offsets below what was appended: never written again).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/kvbm/segment_format.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dynamo::kvbm {

class segment_file {
public:
  /// A new file at `path` (which must not exist) holding its header.
  /// io_error when it cannot be made; `*no_space` says whether for lack of space.
  [[nodiscard]] static expected<std::shared_ptr<segment_file>> create(const std::string& path, uint64_t tag,
                                                                      uint64_t id, bool* no_space = nullptr);
  /// An existing file: corrupt_file when its header is not a segment's.
  [[nodiscard]] static expected<std::shared_ptr<segment_file>> open(const std::string& path);
  ~segment_file();
  segment_file(const segment_file&) = delete;
  segment_file& operator=(const segment_file&) = delete;

  [[nodiscard]] uint64_t id() const noexcept { return header_.segment_id; }
  [[nodiscard]] uint64_t tag() const noexcept { return header_.tag; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Bytes in the file so far (header included): where the next record goes.
  [[nodiscard]] uint64_t end() const noexcept { return end_; }

  /// Writes `header` + `payload` (or, with `header` null, `payload` as a whole
  /// record copied from another segment) at end(); returns its offset, or the
  /// errno when it failed (end() then unchanged: a torn write is overwritten).
  struct appended {
    uint64_t offset = 0;
    int error = 0;
  };
  [[nodiscard]] appended append(const record_header* header, std::span<const std::byte> payload);

  /// A record found by scan(): its header, where it starts.
  struct scanned {
    record_header header;
    uint64_t offset = 0;
  };
  /// The records from the start, up to the first header that is not whole and
  /// valid or whose payload runs past the file's end (a torn tail). Sets end()
  /// after the last one.
  [[nodiscard]] std::vector<scanned> scan();

  /// The records a valid footer lists (one read of the file's tail, two when
  /// the footer is longer than 64 KiB), as scan() would find them; sets end()
  /// after the last one. nullopt when the file has no whole, valid footer.
  [[nodiscard]] std::optional<std::vector<scanned>> read_footer();
  /// Writes the footer (segment_footer) listing every record appended or
  /// scanned so far at end() and cuts the file after it; nothing is appended
  /// after. False when it could not be written (the file then ends at end():
  /// the next open scans it).
  bool seal();
  [[nodiscard]] bool sealed() const noexcept { return sealed_; }

  /// Reads the record at `offset`, its payload into `payload` (whose size is
  /// the block's) and verifies it is block `hash`.
  [[nodiscard]] read_status read(uint64_t offset, uint64_t hash, std::span<std::byte> payload) const;
  /// Reads `count` adjacent records from `offset` with one preadv, payloads
  /// into `payloads[i]`, verifying record i against `hashes[i]` into
  /// `status[i]` (a short read: the records past it are read one by one).
  void read_run(uint64_t offset, std::span<const uint64_t> hashes, std::span<const std::span<std::byte>> payloads,
                std::span<read_status> status) const;
  /// The raw bytes of the record at `offset` (header and payload), for
  /// copying it to another segment; empty when it cannot be read whole.
  [[nodiscard]] std::vector<std::byte> read_raw(uint64_t offset, uint64_t length) const;

  /// Unlinks the file (open descriptors keep reading it).
  void remove() const;

private:
  segment_file(std::string path, int fd, segment_header h, uint64_t end)
      : path_(std::move(path)), fd_(fd), header_(h), end_(end) {}

  std::string path_;
  int fd_ = -1;
  segment_header header_;
  uint64_t end_ = 0;
  bool sealed_ = false;
  std::vector<record_header> records_; ///< of the records appended or scanned, until sealed
};

/// Records per preadv: each takes two iovecs (header, payload).
inline constexpr uint32_t max_run_records = 512;

} // namespace dynamo::kvbm
