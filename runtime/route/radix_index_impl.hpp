// Internal to runtime/route/radix_index*.cpp: the node slab, worker slots and the
// primitive operations both translation units share. Not for other modules.
// Same thread rules as radix_index.
#pragma once

#include "runtime/route/radix_index.hpp"

#include <algorithm>
#include <bit>

namespace dynamo::route {

inline constexpr uint32_t no_node = UINT32_MAX;
inline constexpr uint32_t root_node = 0;

struct child_key {
  uint64_t tokens_hash = 0;
  uint32_t parent = 0;
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

/// The part of a node that find_matches and child lookups touch: 32 bytes, so
/// that the hot array of a large index mostly stays in cache. Workers in slots
/// 0..63 live in `mask`, others in node_cold::more (flag `has_more`).
struct alignas(32) node_hot {
  uint64_t tokens_hash = 0;
  uint64_t mask = 0;
  uint32_t first_child = no_node;
  uint32_t next_sibling = no_node;
  uint32_t child_count = 0;
  uint32_t has_more = 0;
};
static_assert(sizeof(node_hot) == 32);

/// The rest of a node. A free node has parent == no_node (only the root is
/// live without a parent).
struct node_cold {
  uint64_t ext_hash = 0; ///< external hash of the first worker that stored it
  uint64_t stamp = 0;    ///< store clock of the last store touching it
  std::unique_ptr<std::vector<uint32_t>> more; ///< sorted worker slots >= 64
  uint32_t parent = no_node;
  uint32_t prev_sibling = no_node;
  uint32_t depth = 0;
};

struct worker_slot {
  worker_key key;
  flat_map<uint64_t, uint32_t> lookup; ///< external block hash -> node
  flat_map<uint64_t, uint64_t> alias;  ///< node -> external hash, where != node.ext_hash
  bool live = false;
};

struct radix_index::impl {
  explicit impl(radix_index_options o);

  radix_index_options options;
  std::vector<node_hot> hot;   ///< node id -> hot part; id 0 is the root
  std::vector<node_cold> cold; ///< node id -> cold part
  /// Free node ids, one bit each (set: free). A new child takes the first free
  /// id just after its parent when there is one, so a chain stays close in
  /// the hot array and its walk streams through memory.
  std::vector<uint64_t> free_bits;
  size_t free_count = 0;
  size_t free_scan = 0; ///< word where the search for any free id resumes
  flat_map<child_key, uint32_t, child_key_hash> children; ///< of parents past the walk limit
  std::vector<worker_slot> slots;
  flat_map<worker_key, uint32_t, worker_key_hash> slot_of;
  size_t live_nodes = 0;
  size_t entries = 0;
  uint64_t clock = 0;
  uint64_t pruned = 0;
  std::array<std::array<uint64_t, 4>, 3> counters{};
  std::vector<uint32_t> stack;                      ///< scratch for traversals
  std::vector<uint32_t> to_free;                    ///< scratch for traversals
  std::vector<std::pair<uint32_t, uint64_t>> order; ///< scratch for removals

  // Worker membership of a node.
  [[nodiscard]] bool has(uint32_t id, uint32_t slot) const noexcept {
    if (slot < 64)
      return (hot[id].mask >> slot) & 1u;
    const auto& more = cold[id].more;
    return hot[id].has_more && std::binary_search(more->begin(), more->end(), slot);
  }
  [[nodiscard]] bool empty(uint32_t id) const noexcept {
    return hot[id].mask == 0 && !hot[id].has_more;
  }
  void add(uint32_t id, uint32_t slot);
  void drop(uint32_t id, uint32_t slot) noexcept;
  template <class F>
  void for_each_slot(uint32_t id, F&& f) const {
    for (uint64_t m = hot[id].mask; m != 0; m &= m - 1)
      f(static_cast<uint32_t>(std::countr_zero(m)));
    if (hot[id].has_more)
      for (uint32_t s : *cold[id].more)
        f(s);
  }

  // Worker slots.
  [[nodiscard]] const uint32_t* find_slot(const worker_key& w) const noexcept {
    return slot_of.find(w);
  }
  [[nodiscard]] uint32_t acquire_slot(const worker_key& w);
  void release_slot_if_empty(uint32_t slot);
  [[nodiscard]] uint64_t ext_of(uint32_t node, uint32_t slot) const noexcept;
  /// Records that worker `slot` holds `node` under `ext`. False (nothing
  /// changed) when the worker uses `ext` for another node.
  [[nodiscard]] bool set_entry(uint32_t node, uint32_t slot, uint64_t ext);
  void erase_entry(uint32_t node, uint32_t slot);

  // Nodes.
  [[nodiscard]] bool alive(uint32_t id) const noexcept {
    return id == root_node || cold[id].parent != no_node;
  }
  [[nodiscard]] uint32_t find_child(uint32_t parent, uint64_t tokens_hash) const noexcept {
    const node_hot& p = hot[parent];
    if (p.child_count > sibling_walk_limit) {
      const uint32_t* c = children.find(child_key{tokens_hash, parent});
      return c ? *c : no_node;
    }
    for (uint32_t c = p.first_child; c != no_node; c = hot[c].next_sibling)
      if (hot[c].tokens_hash == tokens_hash)
        return c;
    return no_node;
  }
  void unlink(uint32_t id);
  [[nodiscard]] uint32_t take_free_id(uint32_t near);
  void release_id(uint32_t id);
  [[nodiscard]] uint32_t create_child(uint32_t parent, uint64_t tokens_hash, uint64_t ext);
  void free_subtree(uint32_t top);
  void remove_from_subtree(uint32_t top, uint32_t slot);
  [[nodiscard]] size_t remove_slot(uint32_t slot);
  void prune_if_needed();

  // Events.
  [[nodiscard]] apply_status store(uint32_t slot, const protocol::kv_event& ev);
  [[nodiscard]] apply_status remove(uint32_t slot, const protocol::kv_event& ev);
};

} // namespace dynamo::route
