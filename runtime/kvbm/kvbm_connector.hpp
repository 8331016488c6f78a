// The KV block manager as a KV connector (research/dynamo.md 5, docs/KV.md):
// registered G1 blocks are written through to G2 (host) as they register, and
// to G3 (disk) once the frequency filter has counted two offers (registrations
// and prompt hits); a new request's blocks past its G1 prefix that G2/G3 hold
// are onboarded into its allocated G1 blocks before its prefill (on the
// onboard_worker's thread) and count as cached prompt tokens. G2 evicts blocks
// G3 holds before blocks only it holds (block_lru). Tier changes are KV events
// with their medium (CPU, DISK). Owned by engine_core, called from
// its one step thread: not thread-safe.
#pragma once

#include "runtime/kv/kv_cache_manager.hpp"
#include "runtime/kv/kv_connector.hpp"
#include "runtime/kvbm/block_lru.hpp"
#include "runtime/kvbm/disk_store.hpp"
#include "runtime/kvbm/frequency_filter.hpp"
#include "runtime/kvbm/kvbm_config.hpp"
#include "runtime/kvbm/onboard_worker.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dynamo::kvbm {

class kvbm_connector final : public kv::kv_connector {
public:
  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

  /// Over the engine's cache `kv`; `g1` is its KV memory (nullopt: policy
  /// only, as in the mocker: tiers hold hashes, loads move nothing) and
  /// `block_bytes` one block's size, which turns the byte capacities into
  /// blocks. `clock` (empty: steady_clock) drives the filter's decay. Errors:
  /// validate()'s, a disk directory that cannot be used.
  [[nodiscard]] static expected<std::unique_ptr<kvbm_connector>>
  create(kv::kv_cache_manager& kv, kvbm_config cfg, std::optional<g1_view> g1, uint64_t block_bytes,
         clock_fn clock = {});
  ~kvbm_connector() override;

  // --- What the engine tells it.
  /// A new request: the sequence and local (tokens) hashes of its prompt's
  /// full blocks. Its blocks found in any tier, consecutively from the root,
  /// are hits: made most recent in G2/G3 and offered to G3 (the filter counts
  /// reuse, so a block reused once goes to disk even when it never left G1).
  void on_request(const std::string& request_id, std::vector<uint64_t> sequence_hashes,
                  std::span<const uint64_t> local_hashes);
  /// After each step: writes the newly registered G1 blocks through to G2 (and
  /// G3 when the filter lets them), before the scheduler can reuse them.
  void offload(std::span<const kv::block_pool::registered_block> blocks);
  /// Hands the loads admitted since the last call to the I/O thread.
  void start_loads();
  /// Loads started and not yet reported by get_finished().
  [[nodiscard]] size_t loads_in_flight() const { return onboard_.in_flight() + pending_.size(); }
  /// Waits up to `timeout` for a load to end (a step with nothing else to do).
  void wait_for_loads(std::chrono::milliseconds timeout) { (void)onboard_.wait(timeout); }
  /// Onboarded blocks since the last call, by source tier (the mocker's timing).
  struct onboard_tally {
    uint64_t host_blocks = 0;
    uint64_t disk_blocks = 0;
  };
  [[nodiscard]] onboard_tally take_onboarded() { return std::exchange(tally_, {}); }

  [[nodiscard]] const kvbm_counters& counters() const noexcept { return counters_; }
  [[nodiscard]] const block_lru& host() const noexcept { return host_; }
  [[nodiscard]] const disk_store* disk() const noexcept { return disk_ ? &*disk_ : nullptr; }

  // --- kv::kv_connector (the scheduler's side).
  [[nodiscard]] uint32_t get_num_new_matched_tokens(std::string_view request_id, uint32_t num_prompt,
                                                    uint32_t num_computed) override;
  void update_state_after_alloc(std::string_view request_id, std::span<const uint32_t> block_table,
                                size_t first_block) override;
  [[nodiscard]] std::vector<kv::finished_load> get_finished() override;
  [[nodiscard]] kv::release_action on_release(std::string_view request_id, bool completed) override;
  [[nodiscard]] std::optional<protocol::kv_prefill_result> save(std::string_view, std::vector<uint32_t>, uint32_t,
                                                                uint32_t) override {
    return std::nullopt; // never asked: on_release does not answer save
  }
  void adopt(std::string_view request_id, std::vector<uint32_t> blocks) override;
  void clear_requests() override;

private:
  kvbm_connector(kv::kv_cache_manager& kv, kvbm_config cfg, std::optional<g1_view> g1, uint64_t block_bytes,
                 std::optional<disk_store> disk, clock_fn clock);

  /// What a match found for one request (the latest ask).
  struct match {
    uint32_t first_block = 0;  ///< past the G1 prefix
    uint32_t looked_up = 0;    ///< blocks asked of G2/G3
    uint32_t num_blocks = 0;   ///< consecutive G2/G3 hits from first_block
  };
  struct request_state {
    std::vector<uint64_t> hashes; ///< prompt's full blocks
    match last;                   ///< the latest get_num_new_matched_tokens
    bool counted = false;         ///< its lookups are in the counters
    bool loading = false;         ///< its load is pending or running
    onboard_tally job;            ///< what its load brings in, by tier
  };
  [[nodiscard]] match find(const request_state& r, uint32_t num_prompt, uint32_t num_computed) const;
  void count_lookup(request_state& r, uint32_t host_hits, uint32_t disk_hits);
  /// Offers one G2 block to G3 (the filter, then the write).
  void offer_to_disk(const kv::block_pool::registered_block& b, const block_bytes& slab);
  /// Tier events, batched (a stored run of one tier, removals of one tier),
  /// then numbered into the engine's event stream by flush_events().
  void emit_stored(protocol::storage_tier tier, const kv::block_pool::registered_block& b);
  void emit_removed(protocol::storage_tier tier, std::vector<uint64_t> hashes);
  /// G2 evicted these: removed events for those G3 does not hold; the others
  /// stay announced under CPU until G3 drops them (disk_dropped), so that the
  /// router's per-tier prefix trees, where a block's removal takes its
  /// descendants with it, keep the newer blocks G2 still holds below them.
  void host_evicted(std::vector<block_lru::evicted> evicted);
  /// G3 dropped these: they lose their backing in G2, and those announced under
  /// CPU only because G3 held them are removed there too.
  void disk_dropped(const std::vector<uint64_t>& hashes);
  void flush_events();
  /// A finished job: counts, forgets bad disk blocks; the request's result
  /// (nullopt when it left meanwhile: its quarantined blocks are freed).
  [[nodiscard]] std::optional<kv::finished_load> finish(const onboard_done& d);

  kv::kv_cache_manager& kv_;
  kvbm_config cfg_;
  std::optional<g1_view> g1_;
  uint64_t block_bytes_;
  clock_fn clock_;
  block_lru host_;
  std::optional<disk_store> disk_;
  frequency_filter filter_;
  kvbm_counters counters_;
  onboard_tally tally_;
  std::unordered_map<std::string, request_state> requests_;
  std::vector<onboard_job> pending_; ///< admitted, not yet handed to the I/O thread
  std::vector<kv::finished_load> early_; ///< loads that failed before they started
  std::vector<protocol::kv_event> events_; ///< not yet flushed
  std::unordered_set<uint64_t> announced_on_disk_; ///< out of G2, announced under CPU, held by G3
  /// Blocks of requests that left while their load ran: freed when it ends.
  std::unordered_map<std::string, std::vector<uint32_t>> quarantined_;
  onboard_worker onboard_; ///< last: its thread stops before the rest goes
};

} // namespace dynamo::kvbm
