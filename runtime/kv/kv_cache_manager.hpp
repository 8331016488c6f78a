// Per-sequence KV block tables on top of block_pool: prefix-cache lookup at
// admission, slot allocation as a sequence grows, block registration once their
// KV is computed, and freeing on finish or preemption. Called by the engine
// scheduler from the engine's one step thread: not thread-safe.
#pragma once

#include "runtime/kv/block_pool.hpp"
#include "runtime/kv/block_count.hpp"
#include "runtime/kv/token_blocks.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace dynamo::kv {

/// A prefix of a sequence whose KV is already in the cache.
struct computed_blocks {
  std::vector<uint32_t> block_ids; ///< cached blocks, root first
  uint32_t num_tokens = 0;         ///< block_ids.size() * block_size
};

/// Token layout of one sequence and what each call does to it:
///
///   | computed: KV written, full blocks registered | new: computed this step | rest |
///   0                                        num_computed          num_computed+new
///
/// allocate_slots() makes the block table cover `num_computed + new` positions;
/// cache_blocks() registers the blocks that are full within `num_computed` after
/// the step ran; free() returns the whole table to the pool.
class kv_cache_manager {
public:
  /// REQUIRES: num_blocks > 0, block_size > 0.
  kv_cache_manager(uint32_t num_blocks, uint32_t block_size, bool enable_prefix_caching = true,
                   bool emit_events = true);

  [[nodiscard]] uint32_t block_size() const noexcept { return block_size_; }
  [[nodiscard]] const block_pool& pool() const noexcept { return pool_; }

  /// Longest cached prefix of `seq`, in whole blocks, leaving at least the last
  /// token uncovered so the step that computes it can sample (a fully cached
  /// prompt recomputes its last block). Empty with prefix caching off.
  [[nodiscard]] computed_blocks find_computed_blocks(const token_blocks& seq) const;

  /// Makes `seq_id`'s block table cover `num_tokens` positions. On the first
  /// call for a sequence, `prefix` (from find_computed_blocks) is taken first.
  /// Returns the table, or nullopt when the free blocks do not suffice; then
  /// nothing changes.
  [[nodiscard]] std::optional<std::span<const uint32_t>> allocate_slots(
      uint64_t seq_id, uint32_t num_tokens, const computed_blocks& prefix = {});

  /// Free blocks that allocate_slots(seq_id, num_tokens, prefix), plus
  /// `extra` fresh blocks besides (forks), would need beyond what it can
  /// find; 0 means it fits. For chunk sizing.
  [[nodiscard]] uint32_t blocks_missing(uint64_t seq_id, uint32_t num_tokens,
                                        const computed_blocks& prefix = {}, uint32_t extra = 0) const;

  /// What fork() did: the partial last block's copy, when there is one.
  struct fork_copy {
    uint32_t src = 0; ///< the parent's partial block
    uint32_t dst = 0; ///< the child's fresh block
  };

  /// Starts `child`'s table (REQUIRES: it has none) as a copy-on-write fork of
  /// `parent`'s first `num_tokens` positions (REQUIRES: the parent's table
  /// covers them): the full blocks are shared (one more reference each, and
  /// counted as registered: the parent registers them when their KV is
  /// computed), and a partial last block gets a fresh block for the child,
  /// whose content the caller must copy from the parent's (returned). nullopt
  /// (nothing changes) when no block is free for that copy.
  [[nodiscard]] std::optional<std::optional<fork_copy>> fork(uint64_t parent, uint64_t child,
                                                             uint32_t num_tokens);

  /// One more / one less reference on each block (a block copy in flight
  /// keeps its source and destination out of reuse). release() REQUIRES a
  /// matching retain().
  void retain(std::span<const uint32_t> ids) { pool_.acquire(ids); }
  void release(std::span<const uint32_t> ids) { pool_.free(ids); }

  /// Registers the full blocks among `seq`'s first `num_computed` tokens that
  /// are not registered yet (emitting `stored` events). A block whose tokens
  /// are already cached elsewhere is swapped for the cached block in the table
  /// (same KV content). No-op without prefix caching. REQUIRES: the table
  /// covers num_computed positions.
  void cache_blocks(uint64_t seq_id, const token_blocks& seq, uint32_t num_computed);

  /// Returns every block of `seq_id` to the pool (tail-first) and forgets it.
  void free(uint64_t seq_id);

  /// Forgets `seq_id` but keeps its references: the returned table (position
  /// order; empty when it held none) stays in use until free_detached(). For
  /// blocks that outlive their sequence (a prefill's KV held for a decode worker).
  [[nodiscard]] std::vector<uint32_t> detach(uint64_t seq_id);

  /// Drops the references of a detached table, tail-first like free(), so its
  /// registered blocks go back to the prefix cache. REQUIRES: from detach(), once.
  void free_detached(std::span<const uint32_t> blocks) { pool_.free(blocks); }

  /// The block table of `seq_id` (empty when it holds none).
  [[nodiscard]] std::span<const uint32_t> block_table(uint64_t seq_id) const;

  [[nodiscard]] uint32_t num_sequences() const noexcept {
    return static_cast<uint32_t>(tables_.size());
  }

  [[nodiscard]] bool reset_prefix_cache() { return pool_.reset_prefix_cache(); }
  [[nodiscard]] std::vector<protocol::kv_event> drain_events() { return pool_.drain_events(); }
  void push_event(protocol::kv_event e) { pool_.push_event(std::move(e)); }
  /// See block_pool::track_registrations / drain_registered (KVBM's offload feed).
  void track_registrations(bool on) noexcept { pool_.track_registrations(on); }
  [[nodiscard]] std::vector<block_pool::registered_block> drain_registered() { return pool_.drain_registered(); }

private:
  struct table {
    std::vector<uint32_t> blocks;
    uint32_t num_registered = 0; ///< leading blocks registered (or prefix hits)
  };

  [[nodiscard]] uint32_t blocks_for(uint32_t num_tokens) const noexcept {
    return static_cast<uint32_t>(blocks_for_tokens(num_tokens, block_size_));
  }

  uint32_t block_size_;
  bool prefix_caching_;
  block_pool pool_;
  std::unordered_map<uint64_t, table> tables_;
};

} // namespace dynamo::kv
