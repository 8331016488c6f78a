// G3 of the KV block manager: a log-structured store. Offloaded blocks are
// appended as records to large segment files (segment_file), an index maps
// sequence hash -> (segment, offset, length), and block_lru keeps the policy
// (LRU within priority among leaves), as for G2. Owned by kvbm_connector on the
// engine's step thread (not thread-safe); the locations it hands out are read
// on any thread (segment_file keeps the descriptor alive), and so are a
// compaction's victim records (async_compaction: on a thread of its own).
//
// Why segments: one 368 KB file per block made every onboarding read small
// (55-66% of the device's sequential speed with 8 readers); blocks of one
// prompt reach the disk together, so appended together they come back as one
// large read (onboard_worker coalesces adjacent records). And the log can be
// scanned at start: blocks survive a restart (restored()).
//
// Start-up: a segment is sealed when the next one opens (and, at open, a
// scanned one is sealed after the scan): a footer after its last record lists
// every record header, so a restart reads one index per segment instead of one
// header per block (~180k small reads for 64 GiB of 368 KB blocks). The
// footers list every record ever written, holes included; a store that closes
// cleanly also writes a live index (segment_format.hpp), so the next one
// restores only the blocks still held, in the policy's order and priorities.
//
// Space: a block evicted by the policy leaves a hole in its segment; a
// segment with nothing live is deleted, and when the holes add up to more
// than two segments the store copies the live records of the emptiest sealed
// segment to the head of the log and deletes it (compaction; the policy's
// order is untouched, so eviction keeps its meaning; with async_compaction the
// victim is read on a thread of its own and a later write copies what is
// still there). The files thus hold at most the capacity's records plus about
// three segments. No fsync: the tier
// is a cache; after a crash the scan stops at a segment's first torn record
// and a payload that did not reach the disk fails its checksum when read (a
// counted miss, never wrong KV).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/kvbm/block_lru.hpp"
#include "runtime/kvbm/segment_file.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace dynamo::kvbm {

struct disk_store_config {
  /// Directory of the segment files (created). Empty: an index without files
  /// (policy only: the mocker). A directory another live store holds (its
  /// lock file is locked) is not shared: the store takes the first free
  /// "<path>.1", "<path>.2", ...
  std::string path;
  uint64_t capacity_blocks = 0;
  /// A write that would leave less free space on the file system is skipped.
  uint64_t min_free_bytes = uint64_t{1} << 30;
  /// A segment is sealed when the next record would take it past this.
  uint64_t segment_bytes = uint64_t{64} << 20;
  /// What the blocks are KV of (segment_tag()): segments of another tag are
  /// removed at open, the rest are scanned back into the index.
  uint64_t tag = 0;
  /// A compaction reads its victim's live records on a thread of its own and
  /// the write after it ends copies them (false: all inside the write that
  /// starts it, as tests want).
  bool async_compaction = false;
};

enum class write_status : uint8_t {
  stored,    ///< a new record
  present,   ///< already on disk (made most recent)
  disk_full, ///< skipped: the file system is short of space (or said ENOSPC)
  io_error,  ///< skipped: another OS error
};

/// Where a block's record is, for onboard_worker.
struct disk_location {
  std::shared_ptr<const segment_file> file;
  uint64_t offset = 0;
  uint64_t length = 0; ///< payload bytes
};

/// A block found on disk at open: what a stored event needs.
struct restored_block {
  uint64_t sequence_hash = 0;
  uint64_t tokens_hash = 0;
  std::optional<uint64_t> parent;
};

class disk_store {
public:
  /// Claims the directory, removes files of the old one-file-per-block
  /// format and segments of another tag, and scans the rest back into the
  /// index: the blocks the last store's live index lists, in its order, or
  /// after a crash every record, oldest first (the last written the most
  /// recent). io_error when no directory can be used.
  [[nodiscard]] static expected<disk_store> open(disk_store_config cfg);
  disk_store(disk_store&&) noexcept;
  disk_store& operator=(disk_store&&) noexcept;
  ~disk_store();

  struct write_result {
    write_status status = write_status::stored;
    std::vector<uint64_t> evicted; ///< blocks dropped to make room (LRU within priority)
  };
  /// Appends block `hash` (bytes empty: policy only, no record), whose prefix
  /// ends in block `parent` and whose local hash is `tokens_hash`, as the most
  /// recent block of `priority`, evicting leaves when the store is full
  /// (block_lru::insert).
  [[nodiscard]] write_result write(uint64_t hash, std::span<const std::byte> bytes, uint32_t priority = 0,
                                   std::optional<uint64_t> parent = std::nullopt, uint64_t tokens_hash = 0);

  [[nodiscard]] bool contains(uint64_t hash) const { return index_.contains(hash); }
  bool touch(uint64_t hash) { return index_.touch(hash); }
  /// Forgets `hash` (a block found corrupt); false when absent.
  bool erase(uint64_t hash);
  /// Where block `hash` is; nullopt when absent or policy only.
  [[nodiscard]] std::optional<disk_location> locate(uint64_t hash) const;
  [[nodiscard]] bool has_files() const noexcept { return !cfg_.path.empty(); }
  /// The blocks found at open and still held then, each after its parent.
  [[nodiscard]] const std::vector<restored_block>& restored() const noexcept { return restored_; }
  /// How open() found the segments' records: from a sealed segment's footer
  /// (one read), or by scanning each record header (the segment being written
  /// when the last store stopped, or a footer missing, torn or corrupt).
  struct rebuild_stats {
    uint64_t segments_from_footer = 0;
    uint64_t segments_scanned = 0;
    bool live_index = false;      ///< the last store's live index held (it closed cleanly)
    uint64_t evicted_records = 0; ///< records it did not list: blocks evicted into holes
  };
  [[nodiscard]] const rebuild_stats& rebuilt() const noexcept { return rebuilt_; }

  /// The policy's leaves, next evicted first (block_lru::eviction_order).
  [[nodiscard]] std::vector<uint64_t> eviction_order() const { return index_.eviction_order(); }
  [[nodiscard]] uint64_t size() const noexcept { return index_.size(); }
  [[nodiscard]] uint64_t capacity() const noexcept { return index_.capacity(); }
  [[nodiscard]] const std::string& directory() const noexcept { return cfg_.path; }
  /// Waits for a compaction's reads in flight and copies what they read, as
  /// the next write would; the blocks dropped as unreadable (tests, shutdown).
  std::vector<uint64_t> finish_compaction();
  [[nodiscard]] bool compacting() const noexcept { return compaction_ != nullptr; }
  /// Segment files now, and their bytes (tests, diagnostics).
  [[nodiscard]] size_t segment_count() const noexcept { return segments_.size(); }
  [[nodiscard]] uint64_t file_bytes() const noexcept;

private:
  struct place {
    uint64_t segment = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
  };
  struct segment {
    std::shared_ptr<segment_file> file;
    uint64_t live_records = 0;
    uint64_t live_bytes = 0; ///< of its records still indexed
  };

  explicit disk_store(disk_store_config cfg);
  /// Takes the directory's lock (or a free sibling's); io_error when none is free.
  [[nodiscard]] expected<void> claim();
  /// Scans the segments back into the index; removes foreign and dead ones.
  void rebuild();
  /// The blocks placed, in `order` ((key, key, hash) sorted), each after its
  /// parent if placed.
  [[nodiscard]] std::vector<restored_block>
  parents_first(const std::unordered_map<uint64_t, restored_block>& meta,
                std::span<const std::tuple<uint64_t, uint64_t, uint64_t>> order) const;
  /// Reads and removes the directory's live index; nullopt when there is none
  /// or it does not name exactly the segments of `found` (after their footers
  /// or scans set end()) with this store's tag.
  [[nodiscard]] std::optional<live_index>
  take_live_index(const std::map<uint64_t, std::shared_ptr<segment_file>>& found) const;
  /// Writes the live index (at close) and releases the directory.
  void close();
  /// Whether the file system keeps min_free_bytes after `bytes` more (false when statvfs fails).
  [[nodiscard]] bool room_for(uint64_t bytes) const;
  /// Appends a record (header null: `bytes` is a whole record), opening a new
  /// segment when the active one is full; its place, or the status why not.
  [[nodiscard]] std::optional<place> append(const record_header* header, std::span<const std::byte> bytes,
                                            write_status& why);
  void add_live(const place& p);
  /// Forgets where `hash` was; deletes its segment when nothing there lives.
  void drop_place(uint64_t hash);
  /// Copies the live records of the emptiest sealed segment forward and
  /// deletes it, when the holes exceed two segments; a record that cannot be
  /// read back is dropped from the index and listed in `dropped`. The reads
  /// run on their own thread with async_compaction: a later call (or
  /// finish_compaction) copies the records still where they were read.
  void maybe_compact(std::vector<uint64_t>& dropped);
  /// A compaction's victim and its live records (offset, hash, length) as
  /// they were when it started, and their bytes once read (read_all(), on
  /// the compaction's thread: the victim is sealed, never written again).
  struct compaction {
    uint64_t victim = 0;
    std::shared_ptr<segment_file> file; ///< alive while its records move
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> live;
    std::vector<std::vector<std::byte>> raw;
    void read_all();
  };
  /// Copies the records of `c` still in its victim to the head of the log.
  void apply(const compaction& c, std::vector<uint64_t>& dropped);
  /// Applies the compaction in flight once its reads are done (`wait`: waits for them).
  void take_compaction(bool wait, std::vector<uint64_t>& dropped);

  disk_store_config cfg_;
  int lock_fd_ = -1;
  block_lru index_;
  std::unordered_map<uint64_t, place> places_;
  std::map<uint64_t, segment> segments_; ///< by id: oldest first
  uint64_t active_ = 0;                  ///< segment appended to (0: none yet)
  uint64_t next_id_ = 1;
  uint64_t dead_bytes_ = 0; ///< record bytes of evicted blocks still in files
  std::vector<restored_block> restored_;
  rebuild_stats rebuilt_;
  std::shared_ptr<compaction> compaction_; ///< in flight (async_compaction), shared with its thread
  std::future<void> compaction_read_;      ///< its reads
};

/// Removes what the one-file-per-block disk tier left under `root`: its
/// per-process directories "<pool>-<pid>-<index>" of pool `pool` whose process
/// is gone (`alive(pid)` false; by default kill(pid, 0) fails with ESRCH) and
/// which hold block files (*.kvb, *.kvb.tmp) and nothing else, so neither a
/// live process's directory nor a store's "<pool>-<index>" of a pool named
/// like "<pool>-<n>" (it holds segments and its LOCK) is touched. Each removal
/// is logged; returns the directories removed. Any thread; safe to run from
/// several processes at once (each file is removed alone, the directory only
/// when empty).
std::vector<std::string> remove_stale_block_dirs(const std::string& root, std::string_view pool,
                                                 const std::function<bool(long)>& alive = {});

} // namespace dynamo::kvbm
