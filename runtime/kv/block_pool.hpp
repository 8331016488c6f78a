// The pool of KV block ids with reference counts, the prefix cache (full blocks
// keyed by their sequence hash, as the router hashes them) and the KV events
// that describe the cache to the router. Used by kv_cache_manager only; one
// thread (the engine's step loop) drives it: not thread-safe.
#pragma once

#include "runtime/protocol/kv_event.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dynamo::kv {

/// What the pool knows about one block.
struct block_info {
  uint32_t ref_count = 0;
  bool cached = false;                ///< registered under `sequence_hash`
  uint64_t sequence_hash = 0;         ///< valid when cached
  uint64_t tokens_hash = 0;           ///< local hash of the block's tokens; valid when cached
  std::optional<uint64_t> parent_hash;///< sequence hash of the previous block; valid when cached
};

/// Blocks `0 .. num_blocks-1`.
///
/// Invariants (checked by invariant_violation()):
///  - a block is in the free queue iff its ref_count is 0;
///  - every cached block is the one block registered under its sequence hash,
///    so a hash maps to at most one block (duplicates are merged on registration);
///  - num_free_blocks() is the length of the free queue.
///
/// Free queue (eviction order, head = next to be reused):
///
///   head -> [uncached blocks, most recently freed first] [cached blocks, least
///            recently freed first] <- tail
///
/// A freed block without cached content goes to the head (nothing is lost by
/// reusing it); a freed cached block goes to the tail and keeps its content
/// until allocate() reaches it, which evicts it (a `removed` event). Blocks are
/// freed tail-first (free() walks a block table backwards), so a sequence's deep
/// suffix is evicted before the prefix it shares with others.
///
/// Events: `stored` when full blocks are registered, `removed` when cached
/// blocks are evicted, `cleared` on reset_prefix_cache(). Ids count up from 0.
class block_pool {
public:
  /// REQUIRES: num_blocks > 0. With `emit_events` off no events are queued.
  explicit block_pool(uint32_t num_blocks, bool emit_events = true);

  [[nodiscard]] uint32_t num_blocks() const noexcept { return static_cast<uint32_t>(blocks_.size()); }
  /// Blocks with ref_count 0 (cached or not): what allocate() can hand out.
  [[nodiscard]] uint32_t num_free_blocks() const noexcept { return num_free_; }
  [[nodiscard]] uint32_t num_used_blocks() const noexcept { return num_blocks() - num_free_; }
  /// Blocks registered in the prefix cache (in use or free).
  [[nodiscard]] uint32_t num_cached_blocks() const noexcept {
    return static_cast<uint32_t>(cached_.size());
  }
  /// Fraction of blocks in use, in [0, 1].
  [[nodiscard]] float usage() const noexcept;

  /// REQUIRES: id < num_blocks().
  [[nodiscard]] const block_info& info(uint32_t id) const { return blocks_[id].info; }

  /// Ids of the longest run of cached blocks matching `sequence_hashes` from the
  /// root. Changes nothing; call acquire() to take them.
  [[nodiscard]] std::vector<uint32_t> lookup_prefix(std::span<const uint64_t> sequence_hashes) const;

  /// How many of `ids` are free (ref_count 0): acquiring them costs free blocks.
  [[nodiscard]] uint32_t count_free(std::span<const uint32_t> ids) const;

  /// Takes a reference on each block (typically a prefix hit), moving free
  /// ones out of the free queue; cached content is kept.
  void acquire(std::span<const uint32_t> ids);

  /// `n` blocks from the head of the free queue with ref_count 1, evicting any
  /// cached content (one `removed` event per call). nullopt when fewer than `n`
  /// blocks are free; then nothing changes.
  [[nodiscard]] std::optional<std::vector<uint32_t>> allocate(uint32_t n);

  /// Drops one reference on each block of a block table given in position
  /// order, walking it backwards (tail-first). REQUIRES: each ref_count > 0.
  void free(std::span<const uint32_t> block_table);

  /// Registers consecutive full blocks of one block table: ids[i] holds the
  /// block whose sequence hash is sequence_hashes[i] and local hash
  /// local_hashes[i]; `parent` is the sequence hash before ids[0] (nullopt at
  /// the root). When a hash is already cached under another block X (the same
  /// tokens computed twice, e.g. two equal prompts admitted in one step), ids[i]
  /// is replaced by X (X gains a reference; the duplicate is freed): one block
  /// per hash, and the parent of every stored block stays cached while its
  /// child's sequence holds it. Emits one `stored` event per run of newly
  /// registered blocks. REQUIRES: equal lengths; blocks in use and uncached.
  void cache_full_blocks(std::span<uint32_t> ids, std::span<const uint64_t> sequence_hashes,
                         std::span<const uint64_t> local_hashes, std::optional<uint64_t> parent);

  /// Forgets every cached hash and emits `cleared`. Refused (false) while any
  /// block is in use, as running sequences still extend cached chains.
  [[nodiscard]] bool reset_prefix_cache();

  /// Events queued since the last drain, in event_id order.
  [[nodiscard]] std::vector<protocol::kv_event> drain_events();
  /// Queues an event about this worker's KV that the pool did not make (a KV
  /// block manager tier's), numbered in the same sequence; dropped when events are off.
  void push_event(protocol::kv_event e);

  /// A block registered by cache_full_blocks() (not a merged duplicate).
  struct registered_block {
    uint32_t id = 0;
    uint64_t sequence_hash = 0;
    uint64_t tokens_hash = 0;
    std::optional<uint64_t> parent_hash;
  };
  /// Starts (or stops) listing newly registered blocks for drain_registered(),
  /// whether or not events are on (KVBM offloads them).
  void track_registrations(bool on) noexcept { track_registrations_ = on; }
  /// Blocks registered since the last drain, in registration order.
  [[nodiscard]] std::vector<registered_block> drain_registered() { return std::exchange(registered_, {}); }
  /// Number of events queued (not yet drained).
  [[nodiscard]] size_t num_pending_events() const noexcept { return events_.size(); }

  /// Free queue from head (next reused) to tail; for tests and diagnostics.
  [[nodiscard]] std::vector<uint32_t> free_queue() const;

  /// "" when every invariant holds, else a description of the first broken one.
  [[nodiscard]] std::string invariant_violation() const;

private:
  static constexpr uint32_t npos = UINT32_MAX;

  struct node {
    block_info info;
    uint32_t prev = npos;
    uint32_t next = npos;
    bool in_free_queue = false;
  };

  void unlink(uint32_t id);
  void push_front(uint32_t id);
  void push_back(uint32_t id);
  /// Forgets the block's hash; returns it.
  uint64_t evict(uint32_t id);
  [[nodiscard]] protocol::kv_event& new_event(protocol::kv_event_kind kind);

  std::vector<node> blocks_;
  uint32_t head_ = npos;
  uint32_t tail_ = npos;
  uint32_t num_free_ = 0;
  std::unordered_map<uint64_t, uint32_t> cached_; ///< sequence hash -> block id
  bool emit_events_;
  uint64_t next_event_id_ = 0;
  std::vector<protocol::kv_event> events_;
  bool track_registrations_ = false;
  std::vector<registered_block> registered_;
};

} // namespace dynamo::kv
