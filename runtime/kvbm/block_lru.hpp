// A tier of the KV block manager as a set of blocks keyed by sequence hash
// with an eviction order: copies held by a lower tier first, then leaves, LRU
// within priority (research/dynamo.md 5): G2 keeps the blocks' byte slabs in
// it, G3 (disk_store) its index of files; entries without bytes (policy only:
// the mocker) take the same room. Owned by
// kvbm_connector, driven from the engine's step thread: not thread-safe (a
// slab, once shared out, is immutable and may be read from any thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dynamo::kvbm {

/// The bytes of one block (immutable once made); null in policy-only tiers.
using block_bytes = std::shared_ptr<const std::vector<std::byte>>;

class block_lru {
public:
  /// A pool of `capacity_blocks` blocks (0: it holds nothing).
  explicit block_lru(uint64_t capacity_blocks) : capacity_(capacity_blocks) {}

  struct evicted {
    uint64_t sequence_hash = 0;
    block_bytes bytes;
  };

  /// Stores `bytes` under `hash`, whose prefix ends in block `parent`
  /// (nullopt at the root), as the most recently used block of its `priority`
  /// (a hash already present keeps its bytes, takes the priority and becomes
  /// most recent). Returns the blocks evicted to make room, lowest priority
  /// first; within a priority, first the blocks marked backed (a lower tier
  /// holds a copy: losing them here loses nothing), any of them, then leaves
  /// (blocks with no child here); least recently used first within each. So
  /// what this tier and the tier below hold together stays a usable prefix:
  /// an unbacked chain loses its tail first (as G1's free queue frees
  /// tail-first), and a chain whose head is backed keeps its newest blocks,
  /// its only copy. With capacity 0 the block itself.
  [[nodiscard]] std::vector<evicted> insert(uint64_t hash, block_bytes bytes, uint32_t priority = 0,
                                            std::optional<uint64_t> parent = std::nullopt);
  /// Marks `hash` as held (or no longer held) by a lower tier; false when absent.
  bool set_backed(uint64_t hash, bool backed);

  [[nodiscard]] bool contains(uint64_t hash) const { return entries_.count(hash) != 0; }
  /// The block's bytes (null for a policy-only entry); REQUIRES contains(hash).
  [[nodiscard]] const block_bytes& bytes(uint64_t hash) const { return entries_.at(hash).bytes; }
  /// Makes `hash` the most recently used of its priority; false when absent.
  bool touch(uint64_t hash);
  /// Drops `hash` (its children, if any, become roots); false when absent.
  bool erase(uint64_t hash);
  [[nodiscard]] bool backed(uint64_t hash) const { return entries_.at(hash).backed; }

  [[nodiscard]] uint64_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] uint64_t capacity() const noexcept { return capacity_; }
  /// The evictable blocks (backed ones and leaves), from the next evicted to
  /// the last (for tests and diagnostics).
  [[nodiscard]] std::vector<uint64_t> eviction_order() const;
  /// Every block with its priority, in the order of last use: lower priority
  /// first, least recently used first within one (what a restart re-inserts
  /// to keep the order: disk_store's live index).
  [[nodiscard]] std::vector<std::pair<uint64_t, uint32_t>> use_order() const;

private:
  using use_key = std::pair<uint32_t, uint64_t>; ///< (priority, last-use tick)
  /// (priority, 0 when backed else 1, last-use tick): the eviction order.
  using order_key = std::tuple<uint32_t, uint8_t, uint64_t>;
  struct entry {
    block_bytes bytes;
    use_key key;
    std::optional<uint64_t> parent;  ///< when present here
    std::vector<uint64_t> children;  ///< entries here whose parent this is
    bool backed = false;             ///< a lower tier holds a copy
  };
  using entry_map = std::unordered_map<uint64_t, entry>;
  [[nodiscard]] static bool evictable(const entry& e) noexcept { return e.backed || e.children.empty(); }
  [[nodiscard]] static order_key order_of(const entry& e) noexcept {
    return {e.key.first, e.backed ? 0 : 1, e.key.second};
  }
  /// Takes `e` out of / puts it into the eviction order, as evictable() says;
  /// every change to an entry's key, children or backing sits between the two.
  void unlist(const entry& e);
  void list(uint64_t hash, const entry& e);
  /// Removes the entry: its children become roots, its parent loses a child.
  void remove(entry_map::iterator it);

  uint64_t capacity_;
  uint64_t tick_ = 0;
  entry_map entries_;
  std::map<order_key, uint64_t> order_; ///< the evictable blocks -> hash
};

} // namespace dynamo::kvbm
