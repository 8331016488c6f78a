// Disaggregated prefill/decode as a KV connector (research/dynamo.md 4,
// docs/KV.md): the policy of the hand-off, with no transport in it. Prefill
// role: a finished prompt's blocks are saved (kept, never evicted) under its
// request id until the decode worker has loaded them or a TTL passes. Decode
// role: the prompt's KV is loaded from the prefill worker's saved blocks into
// the blocks the scheduler allocated; a failed load makes the request prefill
// locally. Owned by engine_core, called from its one step thread: not thread-safe.
#pragma once

#include "runtime/kv/kv_cache_manager.hpp"
#include "runtime/kv/kv_connector.hpp"
#include "runtime/protocol/disagg.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dynamo::disagg {

/// One load a decode request needs: copy the prefill worker's
/// source_block_ids[i] (of `source`) into local destination_block_ids[i].
/// Blocks already cached locally are left out, so the lists are a suffix of the
/// prompt's blocks, in position order.
struct kv_load {
  std::string request_id;
  protocol::kv_prefill_result source;
  std::vector<uint32_t> source_block_ids;
  std::vector<uint32_t> destination_block_ids;
};

/// "" when an engine with `block_size` and `local` layout (nullopt: its executor
/// exposes none; named `executor`) can load `r` for a prompt of `prompt_len`
/// tokens, else why not.
[[nodiscard]] std::string load_refusal(const protocol::kv_prefill_result& r, size_t prompt_len,
                                       uint32_t block_size, const std::optional<protocol::kv_layout>& local,
                                       std::string_view executor);

/// The kv_push request by which a decode worker has `l` loaded (the prefill
/// worker releases its save afterwards). With KV bytes the worker replaces the
/// layout by its own and adds its receiver's offers.
[[nodiscard]] protocol::kv_push_request push_request(const kv_load& l);
/// A kv_push request that moves nothing and only releases `source`'s save (a
/// prefill result this engine will never load).
[[nodiscard]] protocol::kv_push_request release_request(const protocol::kv_prefill_result& source);
/// The prefill side's check of a kv_push against the save under its hold_id
/// (`saved`; nullopt when none): not_found without a save, invalid_argument
/// when it names blocks the save does not have.
[[nodiscard]] expected<void> check_push(const protocol::kv_push_request& req,
                                        const std::optional<std::vector<uint32_t>>& saved);

class disagg_connector final : public kv::kv_connector {
public:
  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;
  /// `kv` frees the saved and quarantined blocks; `clock` (empty:
  /// steady_clock::now) stamps saves for release_expired().
  disagg_connector(kv::kv_cache_manager& kv, clock_fn clock);

  // --- What the engine tells it about a request (before the scheduler sees it).
  /// Prefill role: save the prompt's blocks when the request completes. A save
  /// still held under the same id (a prefill again) is released: true then.
  [[nodiscard]] bool expect_save(const std::string& request_id);
  /// Decode role: load the prompt's KV from `source` (checked by load_refusal).
  void expect_load(const std::string& request_id, protocol::kv_prefill_result source);
  /// A prefill result this engine will never load (it prefills locally).
  void refuse(protocol::kv_prefill_result source) { refused_.push_back(std::move(source)); }

  // --- Load side, for the worker.
  /// Loads to start, each returned once, in admission order.
  [[nodiscard]] std::vector<kv_load> take_loads();
  /// A load ended; false (nothing changes) when `request_id` has no admitted
  /// load (unknown, not yet admitted, already ended). A quarantined load's
  /// blocks are freed here (and false returned).
  [[nodiscard]] bool finish_load(std::string_view request_id, bool ok);
  /// Prefill results this engine will never load (refused, or their request
  /// went before its load started): their saves should be released. Drains.
  [[nodiscard]] std::vector<protocol::kv_prefill_result> take_refused() { return std::exchange(refused_, {}); }

  // --- Save side, for the worker.
  /// The blocks saved under `request_id` (position order), nullopt when none.
  [[nodiscard]] std::optional<std::vector<uint32_t>> saved_blocks(std::string_view request_id) const;
  /// Frees a save's blocks tail-first (back to the prefix cache). false when unknown.
  bool release(std::string_view request_id);
  /// Frees every save stamped at or before now - ttl; returns how many.
  size_t release_expired(std::chrono::steady_clock::time_point now, std::chrono::milliseconds ttl);
  /// Frees every save; returns how many.
  size_t release_all();
  [[nodiscard]] size_t num_saved() const noexcept { return saved_.size(); }

  // --- kv::kv_connector (the scheduler's side).
  [[nodiscard]] uint32_t get_num_new_matched_tokens(std::string_view request_id, uint32_t num_prompt,
                                                    uint32_t num_computed) override;
  void update_state_after_alloc(std::string_view request_id, std::span<const uint32_t> block_table,
                                size_t first_block) override;
  [[nodiscard]] std::vector<kv::finished_load> get_finished() override { return std::exchange(finished_, {}); }
  [[nodiscard]] kv::release_action on_release(std::string_view request_id, bool completed) override;
  [[nodiscard]] std::optional<protocol::kv_prefill_result>
  save(std::string_view request_id, std::vector<uint32_t> blocks, uint32_t num_prompt, uint32_t last_token) override;
  void adopt(std::string_view request_id, std::vector<uint32_t> blocks) override;
  void clear_requests() override;

private:
  enum class load_state : uint8_t { expected, pending, started };
  struct load {
    protocol::kv_prefill_result source;
    load_state state = load_state::expected;
  };
  struct saved {
    std::vector<uint32_t> blocks; ///< position order
    std::chrono::steady_clock::time_point since;
  };

  kv::kv_cache_manager& kv_;
  clock_fn clock_;
  std::unordered_map<std::string, load> loads_;
  std::vector<kv_load> pending_;                ///< admitted, not yet taken
  std::vector<kv::finished_load> finished_;     ///< for get_finished()
  /// Blocks of requests that went while their load was under way: a transfer
  /// may still write into them, so they stay in use until finish_load().
  std::unordered_map<std::string, std::vector<uint32_t>> quarantined_;
  std::unordered_set<std::string> saves_;       ///< requests to save on completion
  std::unordered_map<std::string, saved> saved_;
  std::vector<protocol::kv_prefill_result> refused_;
};

} // namespace dynamo::disagg
