// The router's global prefix index (research/dynamo.md 3.4): which worker
// caches which KV blocks, applied from KV events and queried by find_matches for
// every routed request. Owned by one thread (the router actor); not thread-safe
// (const methods only write the caller's overlap_scores).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/route/flat_map.hpp"
#include "runtime/route/worker_key.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::route {

/// Outcome of applying one event, as Dynamo counts them
/// (dynamo_component_kv_cache_events_applied{status}).
enum class apply_status : uint8_t { ok, parent_block_not_found, block_not_found, invalid_block };

[[nodiscard]] std::string_view to_string(apply_status s) noexcept;

/// Result of find_matches: for each worker matching at least one block, the
/// number of consecutive blocks matched from the root and its tree size.
/// Reuse one object across calls: find_matches then does not allocate.
struct overlap_scores {
  struct entry {
    worker_key worker;
    uint32_t blocks = 0;    ///< consecutive blocks matched from the first block
    uint64_t tree_size = 0; ///< blocks this worker has in the index
    /// kv_indexer only: consecutive blocks matched in the worker's device
    /// cache or in one of its KVBM tiers (>= blocks; see kv_indexer).
    uint32_t lower_blocks = 0;
  };
  std::vector<entry> scores; ///< unordered; workers with no match are absent

  /// Matched blocks of `w` (0 when absent).
  [[nodiscard]] uint32_t blocks_of(const worker_key& w) const noexcept;
  /// lower_blocks of `w`, at least blocks_of(w) (0 when absent).
  [[nodiscard]] uint32_t lower_blocks_of(const worker_key& w) const noexcept;
  /// Scratch space for find_matches (candidate workers past slot 63).
  std::vector<uint32_t> scratch;
};

struct radix_index_options {
  size_t max_blocks = size_t{1} << 20; ///< bound on (worker, block) entries; 0 = unbounded
  double prune_target_ratio = 0.8;     ///< prune down to this fraction of max_blocks
};

/// A radix tree with compressed edges: each tree position (a block, keyed by
/// its local tokens_hash under its parent) lives in a segment, a chain of
/// blocks held by exactly the same set of workers, so that find_matches walks
/// contiguous arrays rather than one node per block (Dynamo's
/// ConcurrentRadixTreeCompressed does the same). Each worker maps its external
/// block hashes to blocks; block ids are stable across segment splits/merges.
///
/// Invariant: a worker holding a block holds its parent. Stores extend a chain
/// the worker holds; removing a block removes the worker from that block's whole
/// subtree (those blocks are unreachable for prefix matching anyway). A block with
/// no worker is freed at once, so memory follows the cached set (no zombie nodes);
/// segments split where worker sets differ and merge back when they agree again.
/// `max_blocks` bounds the number of (worker, block) entries: past it, the oldest
/// leaves (deepest first on ties) are pruned down to `prune_target_ratio` of it.
class radix_index {
public:
  explicit radix_index(radix_index_options options = {});
  ~radix_index();
  radix_index(radix_index&&) noexcept;
  radix_index& operator=(radix_index&&) noexcept;
  radix_index(const radix_index&) = delete;
  radix_index& operator=(const radix_index&) = delete;

  /// Applies one event of worker (event.worker_id, event.event.dp_rank) and
  /// counts its status. Re-applying a stored event changes nothing. A stored
  /// event whose parent the worker does not hold, or whose hashes conflict,
  /// stores nothing past the failure point.
  [[nodiscard]] apply_status apply(const protocol::router_event& event);

  /// apply() as an error value: ok, or errc::not_found / errc::invalid_argument
  /// with a message starting with the status name.
  [[nodiscard]] expected<void> apply_event(const protocol::router_event& event);

  /// Overlap of `local_hashes` (the request's tokens_hash chain) with every
  /// worker. With `early_exit`, stops once a single worker is left (its score
  /// is then a lower bound). Does not allocate once `out` has grown.
  void find_matches(std::span<const uint64_t> local_hashes, bool early_exit,
                    overlap_scores& out) const;
  [[nodiscard]] overlap_scores find_matches(std::span<const uint64_t> local_hashes,
                                            bool early_exit = false) const;

  /// Forgets every block of every dp rank of `worker_id` (discovery expiry).
  /// Returns the number of entries removed.
  [[nodiscard]] size_t remove_worker(uint64_t worker_id);
  /// Forgets every block of one (worker, dp_rank) (a `cleared` event).
  [[nodiscard]] size_t remove_worker(const worker_key& worker);

  /// Replaces the state of `worker` with the blocks described by `dump`
  /// (stored events, parents first). Returns the first non-ok status.
  [[nodiscard]] apply_status replace_worker(const worker_key& worker, std::span<const protocol::kv_event> dump);

  /// The blocks of `worker` as stored events, parents before children, each a
  /// chain; all carry `event_id` and the worker's dp_rank.
  [[nodiscard]] std::vector<protocol::kv_event> dump_worker(const worker_key& worker,
                                                            uint64_t event_id) const;

  [[nodiscard]] std::vector<worker_key> workers() const;
  [[nodiscard]] size_t tree_size(const worker_key& worker) const noexcept;
  [[nodiscard]] bool holds(const worker_key& worker, uint64_t block_hash) const noexcept;
  [[nodiscard]] size_t node_count() const noexcept;  ///< live nodes, root excluded
  [[nodiscard]] size_t entry_count() const noexcept; ///< (worker, block) pairs
  [[nodiscard]] uint64_t pruned_entries() const noexcept;
  [[nodiscard]] uint64_t applied(protocol::kv_event_kind kind, apply_status status) const noexcept;

  /// Walks the whole structure (O(size); for tests and debugging): empty when
  /// its invariants hold, else the first one found broken.
  [[nodiscard]] std::string check_invariants() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace dynamo::route
