// The router's KV event path (research/dynamo.md 3.4-3.5): per-worker ordering
// (event_sequencer) and the prefix index (radix_index), split into shards by
// worker, each applied by its own event thread (Dynamo's ThreadPoolIndexer), or
// on the caller with one thread. Owned by kv_router. Reads are safe from any
// thread; writes may come from several threads but not concurrently for the same
// worker (a removal racing that worker's events could leave it in two shards); the
// router makes all writes from its actor. Resync requests go to the sink, on an
// event thread (or the caller).
#pragma once

#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/radix_index.hpp"
#include "runtime/route/worker_key.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dynamo::route {

struct kv_indexer_options {
  radix_index_options index;   ///< max_blocks is split evenly across the shards
  uint32_t event_threads = 1;  ///< 1: applied on the caller; N > 1: N shards and threads
  size_t max_pending = 4096;   ///< per worker, while a gap is open (event_sequencer)
  /// Jobs a shard's queue takes before writers wait for its event thread (so a
  /// burst cannot grow memory without bound; the event plane then buffers).
  size_t max_queued = 16384;
};

/// Where resync requests go (to be sent to the worker). Called without locks held.
using resync_sink = std::function<void(protocol::kv_resync_request)>;

/// KV events carry their tier (medium): device events build the prefix index
/// that find_matches scores; a KVBM worker's host and disk tiers each get an
/// index of their own in the same shard (no event of theirs ever changes the
/// device index). find_matches sets each score's lower_blocks to the longest of
/// the three matches: blocks a worker can onboard rather than recompute.
///
/// Each worker (all its dp ranks) belongs to one shard, chosen when it is first
/// seen (the shard with the fewest workers) and kept until it is forgotten; a
/// shard is a radix_index plus the sequencer of its workers. Writes are queued
/// to the worker's shard and applied in order, so they become visible to
/// readers shortly after the call returns (flush() waits for that). Readers
/// lock one shard at a time and take precedence over an event thread that is
/// between two events. find_matches asks every shard; since workers do not
/// span shards, the merged scores are those of one index holding them all.
class kv_indexer {
public:
  explicit kv_indexer(kv_indexer_options options = {}, resync_sink sink = {});
  ~kv_indexer(); ///< applies what is queued, then joins the threads
  kv_indexer(const kv_indexer&) = delete;
  kv_indexer& operator=(const kv_indexer&) = delete;

  /// A KV event from the event plane: sequenced, then applied.
  void on_event(protocol::router_event event);
  /// on_event() of each, moved from; one queue lock per shard for the whole span.
  void on_events(std::span<protocol::router_event> events);
  /// Applied without sequencing (the router's own guesses in approximate mode).
  void apply_unsequenced(protocol::router_event event);
  /// The worker's answer to a resync request.
  void on_replay(protocol::kv_replay replay);
  /// A newly discovered worker: its full dump is requested through the sink.
  void add_worker(const worker_key& worker);
  /// Discovery expiry: forgets every block and the event streams of all its dp ranks.
  void remove_worker(uint64_t worker_id);
  /// Returns once every write queued before the call is applied.
  void flush();

  void find_matches(std::span<const uint64_t> local_hashes, bool early_exit,
                    overlap_scores& out) const;
  [[nodiscard]] size_t tree_size(const worker_key& worker) const;
  [[nodiscard]] bool holds(const worker_key& worker, uint64_t block_hash) const;
  [[nodiscard]] std::vector<worker_key> workers() const;
  [[nodiscard]] std::vector<protocol::kv_event> dump_worker(const worker_key& worker,
                                                            uint64_t event_id) const;
  [[nodiscard]] std::optional<uint64_t> last_event_id(const worker_key& worker) const;
  [[nodiscard]] size_t entry_count() const;
  [[nodiscard]] size_t node_count() const;
  [[nodiscard]] uint64_t pruned_entries() const;
  [[nodiscard]] uint64_t applied(protocol::kv_event_kind kind, apply_status status) const;
  [[nodiscard]] uint32_t shard_count() const noexcept;
  /// check_invariants() of every shard, plus "no worker in two shards".
  [[nodiscard]] std::string check_invariants() const;

private:
  struct shard;
  struct state;
  template <class R, class F>
  R on_shard_of(const worker_key& worker, R none, F&& f) const;
  std::unique_ptr<state> state_;
};

} // namespace dynamo::route
