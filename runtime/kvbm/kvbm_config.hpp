// What configures the KV block manager (the --kvbm-* flags and the cluster
// config's kvbm options: config::kvbm_options, converted by the worker) and what it counts
// (the kvbm_* metrics, named as Dynamo names them). Plain values; any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/kvbm/frequency_filter.hpp"

#include <cstdint>
#include <string>

namespace dynamo::kvbm {

struct kvbm_config {
  uint64_t host_bytes = 0; ///< G2 capacity; 0: no host tier
  uint64_t disk_bytes = 0; ///< G3 capacity; 0: no disk tier
  /// G3 directory; required with disk_bytes on an engine with KV bytes (the
  /// mocker keeps an index only).
  std::string disk_path;
  /// A disk write that would leave less free space is skipped (counted).
  uint64_t disk_min_free_bytes = uint64_t{1} << 30;
  frequency_filter_config disk_filter; ///< G2 -> G3 admission
  /// Onboarding copies run on the connector's own I/O thread (other requests
  /// keep stepping); false: inline, when the loads start (tests).
  bool async_loads = true;
  /// Readers of one onboarding (the I/O thread counts as one): its disk
  /// records form runs of adjacent records, this many runs are read at once,
  /// each by one reader in reads of at most disk_read_bytes (docs/KV.md).
  unsigned disk_readers = 8;
  uint64_t disk_read_bytes = uint64_t{4} << 20;
  /// G3 segment files are sealed at this size; compaction moves one at a time.
  uint64_t disk_segment_bytes = uint64_t{64} << 20;
  /// What the KV is of (the model file, its engine): disk blocks written under
  /// another tag (or block size) are removed at start, the rest are kept.
  std::string disk_tag;

  [[nodiscard]] bool enabled() const noexcept { return host_bytes > 0 || disk_bytes > 0; }
};

/// config_error naming the bad field: disk without a path where bytes move.
[[nodiscard]] expected<void> validate(const kvbm_config& cfg, bool moves_bytes);

/// Monotonic counters; the hit rates derive from them.
struct kvbm_counters {
  uint64_t matched_tokens = 0;     ///< kvbm_matched_tokens: prompt tokens onboarded from G2/G3
  uint64_t offload_blocks_d2h = 0; ///< kvbm_offload_blocks_d2h: G1 -> G2
  uint64_t offload_blocks_h2d = 0; ///< kvbm_offload_blocks_h2d: G2 -> G3 (host to disk)
  uint64_t onboard_blocks_h2d = 0; ///< kvbm_onboard_blocks_h2d: G2 -> G1
  uint64_t onboard_blocks_d2d = 0; ///< kvbm_onboard_blocks_d2d: G3 -> G1 (disk to device)
  /// Blocks asked for past the G1 prefix at admission (the hit rates' denominator).
  uint64_t lookup_blocks = 0;
  uint64_t host_hit_blocks = 0;    ///< of those, found in G2
  uint64_t disk_hit_blocks = 0;    ///< of those, found in G3 (not in G2)
  uint64_t disk_read_missing = 0;  ///< onboard reads that found no file
  uint64_t disk_read_truncated = 0;
  uint64_t disk_read_corrupt = 0;  ///< wrong header or checksum
  uint64_t loads_failed = 0;       ///< onboards abandoned (the request recomputed)
  uint64_t offload_skipped_disk_full = 0;
  uint64_t offload_skipped_io_error = 0;
  uint64_t host_evictions = 0;
  uint64_t disk_evictions = 0;
  uint64_t disk_read_bytes = 0;   ///< onboarded from disk files
  double disk_read_seconds = 0;   ///< the I/O thread's wall time reading them

  /// kvbm_host_cache_hit_rate: host_hit_blocks / lookup_blocks (0 without lookups).
  [[nodiscard]] double host_hit_rate() const noexcept {
    return lookup_blocks == 0 ? 0.0 : static_cast<double>(host_hit_blocks) / static_cast<double>(lookup_blocks);
  }
  /// kvbm_disk_cache_hit_rate: disk_hit_blocks / lookup_blocks.
  [[nodiscard]] double disk_hit_rate() const noexcept {
    return lookup_blocks == 0 ? 0.0 : static_cast<double>(disk_hit_blocks) / static_cast<double>(lookup_blocks);
  }
};

} // namespace dynamo::kvbm
