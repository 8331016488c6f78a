// G3 of the KV block manager: offloaded KV blocks as files under one
// directory, one file per block, each with a header {magic, version, sequence
// hash, payload length, XXH3-64 checksum of the payload}. A read verifies all
// of it: a missing, truncated or corrupt file is a miss (never bytes that are
// not that block's). A disk short of free space skips the write. Owned by
// kvbm_connector on the engine's step thread (the index is not thread-safe);
// read_block_file() touches no index and runs on any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/kvbm/block_lru.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dynamo::kvbm {

struct disk_store_config {
  /// Directory of the block files (created; stale block files in it are
  /// removed). Empty: an index without files (policy only: the mocker).
  std::string path;
  uint64_t capacity_blocks = 0;
  /// A write that would leave less free space on the file system is skipped.
  uint64_t min_free_bytes = uint64_t{1} << 30;
};

enum class write_status : uint8_t {
  stored,    ///< a new file
  present,   ///< already on disk (made most recent)
  disk_full, ///< skipped: the file system is short of space (or said ENOSPC)
  io_error,  ///< skipped: another OS error
};

enum class read_status : uint8_t {
  ok,
  missing,   ///< no such file
  truncated, ///< shorter than its header says
  corrupt,   ///< wrong magic, hash, length or checksum
};

[[nodiscard]] const char* to_string(read_status s) noexcept;

/// The file header, little-endian on disk.
struct block_file_header {
  static constexpr uint32_t magic_value = 0x42564b44; ///< "DKVB"
  static constexpr uint32_t version_value = 1;
  uint32_t magic = magic_value;
  uint32_t version = version_value;
  uint64_t sequence_hash = 0;
  uint64_t length = 0;   ///< payload bytes
  uint64_t checksum = 0; ///< XXH3-64 (seed 0) of the payload
};
static_assert(sizeof(block_file_header) == 32);

/// XXH3-64 (seed 0) of `bytes`: the checksum a block file carries.
[[nodiscard]] uint64_t block_checksum(std::span<const std::byte> bytes) noexcept;

/// Reads the block file at `path` into `out` (whose size is the block's length)
/// and verifies it is block `hash`. On a failure `out` may hold garbage.
[[nodiscard]] read_status read_block_file(const std::string& path, uint64_t hash, std::span<std::byte> out);

class disk_store {
public:
  /// Creates the directory and removes stale block files. io_error when it
  /// cannot be created or is not a directory.
  [[nodiscard]] static expected<disk_store> open(disk_store_config cfg);

  struct write_result {
    write_status status = write_status::stored;
    std::vector<uint64_t> evicted; ///< hashes whose files made room (LRU within priority)
  };
  /// Writes block `hash` (bytes empty: policy only, no file), whose prefix
  /// ends in block `parent`, as the most recent block of `priority`, evicting
  /// leaves when the store is full (block_lru::insert).
  [[nodiscard]] write_result write(uint64_t hash, std::span<const std::byte> bytes, uint32_t priority = 0,
                                   std::optional<uint64_t> parent = std::nullopt);

  [[nodiscard]] bool contains(uint64_t hash) const { return index_.contains(hash); }
  bool touch(uint64_t hash) { return index_.touch(hash); }
  /// Forgets `hash` and deletes its file (a block found corrupt); false when absent.
  bool erase(uint64_t hash);
  /// The file of `hash` (whether or not it exists).
  [[nodiscard]] std::string path_of(uint64_t hash) const;
  [[nodiscard]] bool has_files() const noexcept { return !cfg_.path.empty(); }

  [[nodiscard]] uint64_t size() const noexcept { return index_.size(); }
  [[nodiscard]] uint64_t capacity() const noexcept { return index_.capacity(); }
  [[nodiscard]] const std::string& directory() const noexcept { return cfg_.path; }

private:
  explicit disk_store(disk_store_config cfg) : cfg_(std::move(cfg)), index_(cfg_.capacity_blocks) {}
  /// Whether the file system keeps min_free_bytes after `bytes` more (false when statvfs fails).
  [[nodiscard]] bool room_for(uint64_t bytes) const;

  disk_store_config cfg_;
  block_lru index_;
};

} // namespace dynamo::kvbm
