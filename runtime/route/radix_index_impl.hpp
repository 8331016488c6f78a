// Internal to runtime/route/radix_index*.cpp: segments (compressed edges), the block
// table, worker slots and the primitive operations the translation units share.
// Not for other modules. Same thread rules as radix_index.
#pragma once

#include "runtime/route/radix_index.hpp"

#include <algorithm>
#include <bit>

namespace dynamo::route {

inline constexpr uint32_t no_id = UINT32_MAX;
inline constexpr uint32_t root_seg = 0;

struct child_key {
  uint64_t tokens_hash = 0; ///< of the child's first block
  uint32_t parent = 0;      ///< segment
  friend bool operator==(const child_key&, const child_key&) = default;
};

struct child_key_hash {
  [[nodiscard]] uint64_t operator()(const child_key& k) const noexcept {
    return mix64(k.tokens_hash ^ (uint64_t{k.parent} * 0x9e3779b97f4a7c15ull));
  }
};

/// Parents with more children than this also index them in the children map;
/// smaller families are found by walking the sibling list (no hash probe).
inline constexpr uint32_t sibling_walk_limit = 8;

struct seg_entry {
  uint64_t tokens_hash = 0;
  uint32_t block = no_id;
};

/// A compressed edge: consecutive blocks (a chain) held by exactly the same
/// workers. The segment's first block's parent is the parent segment's last
/// block (none for the root's children). Workers in slots 0..63 live in `mask`,
/// others in `more` (sorted). A free segment has parent == no_id.
///
/// Invariants: a worker of a segment holds every block of it and every block of
/// its ancestors; no segment but the root is empty (of blocks or of workers).
struct segment {
  uint64_t first_token = 0; ///< entries[0].tokens_hash, inline for sibling walks
  uint64_t mask = 0;
  std::vector<seg_entry> entries;
  std::unique_ptr<std::vector<uint32_t>> more;
  uint32_t parent = no_id;
  uint32_t first_child = no_id;
  uint32_t next_sibling = no_id;
  uint32_t prev_sibling = no_id;
  uint32_t child_count = 0;
  uint32_t depth = 0; ///< depth of entries[0]; the root's children have depth 1
  [[nodiscard]] uint32_t size() const noexcept { return static_cast<uint32_t>(entries.size()); }
};

/// A block: one position in the tree, with a stable id (splits and merges of
/// segments move blocks, never renumber them). A free block has seg == no_id.
struct block_info {
  uint64_t ext_hash = 0; ///< external hash of the first worker that stored it
  uint64_t stamp = 0;    ///< store clock of the last store touching it
  uint32_t seg = no_id;
  uint32_t off = 0; ///< index in the segment's entries
};

struct worker_slot {
  worker_key key;
  flat_map<uint64_t, uint32_t> lookup; ///< external block hash -> block
  flat_map<uint64_t, uint64_t> alias;  ///< block -> external hash, where != block.ext_hash
  bool live = false;
};

struct radix_index::impl {
  explicit impl(radix_index_options o);

  radix_index_options options;
  std::vector<segment> segs; ///< segment id -> segment; id 0 is the root
  std::vector<uint32_t> free_segs;
  std::vector<block_info> blocks; ///< block id -> block
  std::vector<uint32_t> free_blocks;
  flat_map<child_key, uint32_t, child_key_hash> children; ///< of parents past the walk limit
  std::vector<worker_slot> slots;
  flat_map<worker_key, uint32_t, worker_key_hash> slot_of;
  size_t live_blocks = 0;
  size_t entries = 0;
  uint64_t clock = 0;
  uint64_t pruned = 0;
  std::array<std::array<uint64_t, 4>, 3> counters{};
  std::vector<uint32_t> stack;                      ///< scratch for traversals
  std::vector<uint32_t> to_free;                    ///< scratch for traversals
  std::vector<uint32_t> touched;                    ///< scratch: segments that lost a worker
  std::vector<std::pair<uint32_t, uint64_t>> order; ///< scratch for events

  // Worker membership of a segment.
  [[nodiscard]] bool has(uint32_t s, uint32_t slot) const noexcept {
    if (slot < 64)
      return (segs[s].mask >> slot) & 1u;
    const auto& more = segs[s].more;
    return more && std::binary_search(more->begin(), more->end(), slot);
  }
  [[nodiscard]] bool empty(uint32_t s) const noexcept {
    return segs[s].mask == 0 && !segs[s].more;
  }
  [[nodiscard]] bool only(uint32_t s, uint32_t slot) const noexcept;
  [[nodiscard]] bool same_workers(uint32_t a, uint32_t b) const noexcept;
  void add(uint32_t s, uint32_t slot);
  void drop(uint32_t s, uint32_t slot) noexcept;
  template <class F>
  void for_each_slot(uint32_t s, F&& f) const {
    for (uint64_t m = segs[s].mask; m != 0; m &= m - 1)
      f(static_cast<uint32_t>(std::countr_zero(m)));
    if (segs[s].more)
      for (uint32_t x : *segs[s].more)
        f(x);
  }

  // Worker slots and their entries.
  [[nodiscard]] const uint32_t* find_slot(const worker_key& w) const noexcept {
    return slot_of.find(w);
  }
  [[nodiscard]] uint32_t acquire_slot(const worker_key& w);
  void release_slot_if_empty(uint32_t slot);
  [[nodiscard]] uint64_t ext_of(uint32_t block, uint32_t slot) const noexcept;
  /// Records that worker `slot` holds `block` under `ext`; `held`: it held it
  /// already, maybe under another name (a rename). False (nothing changed) when
  /// the worker uses `ext` for another block.
  [[nodiscard]] bool set_entry(uint32_t block, uint32_t slot, uint64_t ext, bool held);
  void erase_entry(uint32_t block, uint32_t slot);
  /// Erases the entries of every block of `s` for `slot` and drops it from `s`.
  void leave(uint32_t s, uint32_t slot);

  // Segments and blocks.
  [[nodiscard]] bool seg_alive(uint32_t s) const noexcept {
    return s == root_seg || segs[s].parent != no_id;
  }
  [[nodiscard]] bool block_alive(uint32_t b) const noexcept {
    return b < blocks.size() && blocks[b].seg != no_id;
  }
  [[nodiscard]] uint32_t depth_of(uint32_t b) const noexcept {
    return segs[blocks[b].seg].depth + blocks[b].off;
  }
  [[nodiscard]] uint32_t find_child(uint32_t parent, uint64_t tokens_hash) const noexcept {
    const segment& p = segs[parent];
    if (p.child_count > sibling_walk_limit) {
      const uint32_t* c = children.find(child_key{tokens_hash, parent});
      return c ? *c : no_id;
    }
    for (uint32_t c = p.first_child; c != no_id; c = segs[c].next_sibling)
      if (segs[c].first_token == tokens_hash)
        return c;
    return no_id;
  }
  [[nodiscard]] uint32_t new_segment(uint32_t parent);
  [[nodiscard]] uint32_t new_block(uint32_t s, uint64_t tokens_hash, uint64_t ext);
  void link_child(uint32_t parent, uint32_t c);
  void unlink(uint32_t c);
  void move_children(uint32_t from, uint32_t to);
  /// Splits `s` before its block `n` (0 < n < size): `s` keeps blocks [0, n),
  /// a new child segment with the same workers takes the rest and the children.
  uint32_t split(uint32_t s, uint32_t n);
  /// Absorbs `s`'s only child while it has exactly the same workers.
  void try_merge(uint32_t s);
  void release_segment(uint32_t s);
  /// Frees `top` and its descendants with their blocks; tries to merge the
  /// parent with what is left. REQUIRES: none of them has a worker.
  void free_subtree(uint32_t top);
  void remove_from_subtree(uint32_t top, uint32_t slot);
  /// After `touched` segments lost a worker: frees those left empty, merges the rest.
  void settle_touched();
  [[nodiscard]] size_t remove_slot(uint32_t slot);
  void prune_if_needed();

  // Events.
  [[nodiscard]] apply_status store(uint32_t slot, const protocol::kv_event& ev);
  [[nodiscard]] apply_status remove(uint32_t slot, const protocol::kv_event& ev);
  /// A worker walking into segment `s` (not yet one of its workers) holds its
  /// first `n` blocks: `s` splits there if needed and takes the worker.
  void join(uint32_t s, uint32_t n, uint32_t slot);
};

} // namespace dynamo::route
