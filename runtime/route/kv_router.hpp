// The router's decision core: prefix index (a kv_indexer, fed by KV events on
// its own event threads) + predicted load (active_sequences) + selector, behind
// route() and the request lifecycle calls. Owned by the router actor (or the
// simulation benchmark); not thread-safe, except that resync requests reach the
// sink on an event thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/active_sequences.hpp"
#include "runtime/route/config.hpp"
#include "runtime/route/kv_indexer.hpp"
#include "runtime/route/selector.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dynamo::route {

struct route_request {
  std::string request_id;
  std::span<const uint32_t> tokens;          ///< the prompt, or empty when hashes are given
  std::span<const uint64_t> local_hashes;    ///< precomputed tokens hashes (used if tokens empty)
  uint32_t isl = 0;                          ///< prompt tokens; 0 = tokens.size()
  std::span<const worker_key> candidates;    ///< allowed workers; must not be empty
  router_config_override overrides;
  std::optional<worker_key> pinned;          ///< bypasses scoring, still booked
};

struct route_decision {
  worker_key worker;
  uint32_t overlap_blocks = 0;         ///< cached prefix blocks on the chosen worker
  candidate_cost chosen;               ///< its cost breakdown
  std::vector<candidate_cost> costs;   ///< every candidate's breakdown
};

/// route(): block-hash the request, find each candidate's cached prefix, cost
/// every candidate (research/dynamo.md 3.6), choose, and book the request on the
/// chosen worker. Call mark_prefill_completed() on its first token and free() at
/// its end. Without KV events (--no-kv-events) the index is fed from the
/// router's own decisions instead (approximate mode; size-bounded, no TTL yet;
/// applied on the caller, so the next route() sees it).
///
/// KV events are applied by `router_event_threads` event threads (one: on the
/// caller), so route() sees an event shortly after on_event() returns, not at
/// once; flush() waits for them. Resync requests go to `sink`.
class kv_router {
public:
  kv_router(kv_router_config config, uint32_t block_size, router_mode mode, uint64_t seed,
            resync_sink sink = {});

  /// Chooses a worker and books the request on it. errc::no_workers without
  /// candidates, errc::invalid_argument for a duplicate id or bad input.
  [[nodiscard]] expected<route_decision> route(const route_request& request);

  /// The longest cached prefix of `tokens` on any worker, in blocks (read
  /// only: nothing is booked). Conditional disaggregation uses it.
  [[nodiscard]] uint32_t best_overlap_blocks(std::span<const uint32_t> tokens);

  [[nodiscard]] bool mark_prefill_completed(const std::string& request_id);
  [[nodiscard]] bool free(const std::string& request_id);

  /// A KV event from the event plane: applied in order per worker; when a gap
  /// opens, a resync request goes to the sink.
  void on_event(protocol::router_event event);
  /// on_event() of each, moved from.
  void on_events(std::span<protocol::router_event> events) { index_.on_events(events); }
  /// The worker's answer to a resync request.
  void on_replay(protocol::kv_replay replay);
  /// Returns once every event and replay given before the call is applied.
  void flush() { index_.flush(); }

  /// The worker's KV capacity in blocks (its load reports' (topic
  /// "kv_metrics") load_metrics::total_blocks). With router_kv_capacity on,
  /// a worker whose booked blocks plus the request's would exceed it is chosen
  /// only when every candidate would (candidate_cost::overflow_blocks); with
  /// it off, or for 0 (unknown), nothing is recorded. True when the capacity
  /// is new or changed (callers log and publish it). Unknown until set: no
  /// capacity term for that worker.
  bool set_worker_capacity(const worker_key& worker, uint64_t kv_blocks);
  /// The capacity set for `worker`, if any.
  [[nodiscard]] std::optional<uint64_t> worker_capacity(const worker_key& worker) const;
  /// Every capacity set (for /metrics and the admin API).
  [[nodiscard]] const std::unordered_map<worker_key, uint64_t>& worker_capacities() const noexcept {
    return capacity_;
  }

  /// A newly discovered worker: its dump request goes to the sink.
  void add_worker(const worker_key& worker);
  /// Discovery expiry: forget its blocks, bookings and event stream.
  void remove_worker(uint64_t worker_id);

  [[nodiscard]] const kv_indexer& index() const noexcept { return index_; }
  [[nodiscard]] const active_sequences& sequences() const noexcept { return sequences_; }
  [[nodiscard]] const kv_router_config& config() const noexcept { return config_; }
  [[nodiscard]] router_mode mode() const noexcept { return mode_; }
  [[nodiscard]] uint32_t block_size() const noexcept { return block_size_; }

private:
  void cost_candidates(const route_request& r, std::span<const uint64_t> seq_hashes,
                       uint32_t isl, std::vector<candidate_cost>& out) const;
  [[nodiscard]] size_t choose(const route_request& r, std::span<const candidate_cost> costs);
  void record_approximate(const worker_key& w, std::span<const uint64_t> local,
                          std::span<const uint64_t> seq);

  kv_router_config config_;
  uint32_t block_size_;
  router_mode mode_;
  kv_indexer index_;
  active_sequences sequences_;
  kv_selector kv_selector_;
  round_robin_selector round_robin_;
  random_selector random_;
  std::mt19937_64 hash_rng_; ///< random sequence hashes when assume_kv_reuse is off
  overlap_scores scores_;
  std::unordered_map<worker_key, uint64_t> capacity_; ///< KV blocks per worker, where known
  std::vector<candidate_cost> fitting_;    ///< choose(): the candidates without overflow
  std::vector<size_t> fitting_index_;      ///< ... and their indexes in the costs
  std::vector<uint64_t> local_;
  std::vector<uint64_t> seq_;
  uint64_t approx_event_id_ = 0;
};

} // namespace dynamo::route
