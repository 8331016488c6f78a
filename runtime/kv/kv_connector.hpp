// The one seam for KV movement into and out of an engine (vLLM v1's KV
// connector shape; docs/KV.md): the scheduler calls a connector at fixed points,
// the connector decides which prompt blocks are loaded from elsewhere (a prefill
// worker, later a lower KVBM tier) and which finished blocks are saved. Policy
// only: bytes move outside (planes/transfer, driven by the worker actor).
// Called from the engine's one step thread: not thread-safe.
#pragma once

#include "runtime/protocol/disagg.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::kv {

/// A load that ended (get_finished()).
struct finished_load {
  std::string request_id;
  bool ok = false;
  /// Appended after the loaded tokens (a remote prefill's sampled token); none:
  /// the request goes on computing from the loaded tokens.
  std::optional<uint32_t> next_token;
  /// The loaded tokens were this worker's own KV (KVBM onboarding from host or
  /// disk), so they count as cached prompt tokens; a remote prefill's do not.
  bool cached = false;
};

/// What the scheduler does with the blocks of a request that leaves.
enum class release_action : uint8_t {
  free,      ///< free them (the usual case)
  save,      ///< detach the prompt's blocks and hand them to save()
  quarantine ///< a load may still write into them: detach and hand them to adopt()
};

/// The scheduler's side of a connector, in the order it calls them:
///  1. get_num_new_matched_tokens() while a request waits for admission;
///  2. update_state_after_alloc() once its blocks for those tokens are allocated
///     (the request then waits for KV: never scheduled, never preempted);
///  3. the loads start outside (the engine hands them to the worker: start_load);
///  4. get_finished() after a load ends: the scheduler completes those requests;
///  5. on_release() when a request leaves: free, save or quarantine its blocks;
///     save() / adopt() take the detached blocks.
class kv_connector {
public:
  virtual ~kv_connector() = default;

  /// Prompt tokens after the first `num_computed` (the local prefix-cache hit)
  /// that this connector will load for `request_id` (a prompt of `num_prompt`
  /// tokens); 0 when none (the scheduler computes them). No side effects: it
  /// may be asked again before the request is admitted.
  [[nodiscard]] virtual uint32_t get_num_new_matched_tokens(std::string_view request_id, uint32_t num_prompt,
                                                            uint32_t num_computed) = 0;

  /// The request's blocks are allocated: `block_table` covers its prompt, and
  /// blocks from `first_block` on receive the loaded tokens.
  virtual void update_state_after_alloc(std::string_view request_id, std::span<const uint32_t> block_table,
                                        size_t first_block) = 0;

  /// Loads that ended since the last call, each once, in the order they ended.
  [[nodiscard]] virtual std::vector<finished_load> get_finished() = 0;

  /// `request_id` leaves the scheduler: `completed` after it produced its last
  /// token (stop or length), false when aborted or failed.
  [[nodiscard]] virtual release_action on_release(std::string_view request_id, bool completed) = 0;

  /// After release_action::save: the request's prompt blocks (position order,
  /// detached: the connector frees them), its prompt length and the last token
  /// it sampled. Returns the transfer parameters to report with its last chunk.
  [[nodiscard]] virtual std::optional<protocol::kv_prefill_result>
  save(std::string_view request_id, std::vector<uint32_t> blocks, uint32_t num_prompt, uint32_t last_token) = 0;

  /// After release_action::quarantine: the request's detached blocks, freed by
  /// the connector once the load that writes into them ends.
  virtual void adopt(std::string_view request_id, std::vector<uint32_t> blocks) = 0;

  /// Every request left at once (the executor failed; the scheduler freed their
  /// blocks itself): forget every load and save in progress.
  virtual void clear_requests() = 0;
};

} // namespace dynamo::kv
