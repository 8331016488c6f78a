// The continuous-batching scheduler (vLLM style) as a pure step function:
// schedule() picks this step's work as an engine::batch, update() applies the
// executor's result and says what each request produced. Owns the KV cache
// manager. Driven by engine_core from one thread: not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/sequence.hpp"
#include "runtime/kv/kv_cache_manager.hpp"
#include "runtime/protocol/llm.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dynamo::engine {

struct scheduler_config {
  uint32_t block_size = 16;               ///< tokens per KV block (the executor's)
  uint32_t num_blocks = 1024;             ///< KV blocks in the pool (the executor's)
  uint32_t max_model_len = 8192;          ///< prompt + output limit; finish "length" there
  uint32_t max_num_seqs = 256;            ///< running requests at most
  uint32_t max_num_batched_tokens = 8192; ///< tokens per step at most
  /// Requests mid-way through a chunked prefill at most; a chunk that leaves its
  /// request mid-prefill takes at most max_num_batched_tokens / this, so that
  /// several long prompts advance together (vLLM's concurrent partial prefills).
  uint32_t max_num_partial_prefills = 1;
  bool enable_prefix_caching = true;
  bool emit_kv_events = true;             ///< queue kv events (needs prefix caching)
  /// Stamps held prefill blocks (for release_expired_holds); empty: steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

/// config_error naming the first bad field, if any.
[[nodiscard]] expected<void> validate(const scheduler_config& cfg);

/// What one request produced in a step: its new token and/or its end.
struct request_output {
  std::string request_id;
  protocol::engine_output output;
  /// The final chunk of a disaggregated prefill request: the blocks now held
  /// under hold_id = request_id. The scheduler fills hold_id, block_ids,
  /// num_tokens and first_token; engine_core adds the layout and also encodes
  /// it into output.disagg.
  std::optional<protocol::kv_prefill_result> prefill_result;
};

/// How a request takes part in disaggregated serving (research/dynamo.md 4).
struct disagg_mode {
  /// Prefill role: on finishing, hold the prompt's blocks under the request id.
  bool hold_prompt = false;
  /// Decode role: pull the prompt's KV from these blocks instead of computing
  /// it. REQUIRES (checked by engine_core): num_tokens == prompt length,
  /// block_ids.size() == ceil(num_tokens / block_size), same block size and layout.
  std::optional<protocol::kv_prefill_result> remote_prompt;
};

/// One KV transfer a decode request needs: copy the prefill worker's
/// source_block_ids[i] (of `source`) into local destination_block_ids[i].
/// Blocks already cached locally are left out, so the lists are a suffix of the
/// prompt's blocks, in position order.
struct kv_pull {
  std::string request_id;
  protocol::kv_prefill_result source;
  std::vector<uint32_t> source_block_ids;
  std::vector<uint32_t> destination_block_ids;
};

/// One step:
///   1. running decodes (one token each), in admission order; when blocks run
///      out, the most recently admitted request not yet scheduled in this step
///      is preempted (blocks freed, back to the front of the waiting queue, to
///      be recomputed later, mostly from the prefix cache);
///   2. running partial prefills, in admission order, each a chunk of its
///      remaining tokens (capped, see chunk_size()), preempting newer
///      unscheduled requests or shrinking the chunk when blocks run out;
///   3. waiting requests, first come first served, while the token budget,
///      max_num_seqs, max_num_partial_prefills and free blocks allow. A request
///      starts after its cached prefix (always recomputing at least its last
///      token so that the step can sample).
/// The batch lists decodes first, then prefill chunks.
///
/// Several choices (sampling.n > 1). The request is one sequence (choice 0)
/// until the step that computes its prompt's last token: that step also
/// forks choices 1..n-1, each a sequence of its own whose first token is
/// drawn from the same logits (a batch_entry with fork_of, computing nothing)
/// with its own RNG stream (seed + choice when seeded). A fork shares the
/// prompt's full KV blocks (one more reference each) and gets a fresh copy of
/// its partial last block (copy-on-write: the copy is the next batch's
/// block_copies, whose blocks stay referenced until that step is applied), so
/// the prompt is computed once. A request counts n sequences against
/// max_num_seqs from admission on; the step that completes the prompt also
/// needs a free block per fork when the prompt ends mid-block (else it stops
/// one token short and the fork waits). Each choice then runs, stops and is
/// preempted on its own; its chunks carry output.index, and a choice that
/// ends while others go on reports choice_finish (finish stays none) so that
/// the request's last chunk is the only one with finish set. abort() ends
/// every choice; an error in one ends the request.
///
/// Disaggregation. A decode request (disagg_mode::remote_prompt) is admitted
/// in its turn, without using the token budget, into WAITING_FOR_KV: blocks
/// for its whole prompt are allocated (local prefix-cache hits first) and a
/// kv_pull for the other blocks is queued for take_pulls(). It counts against
/// max_num_seqs, is never scheduled nor preempted, until complete_transfer():
///   ok:     the prompt counts as computed, its full blocks are registered
///           (stored events), the prefill's first token is appended and
///           reported, and the request decodes like any other;
///   failed: the request keeps its blocks and prefills locally from its local
///           prefix hit. Keeping them (rather than freeing) means a late byte of
///           the failed transfer can only land in this request's own blocks,
///           which the local prefill then overwrites (planes/transfer/kv_transport.hpp).
/// A prefill request (disagg_mode::hold_prompt) runs normally; when it
/// finishes (stop or length, not error or abort), its prompt blocks are
/// detached into a hold instead of being freed.
class scheduler {
public:
  /// REQUIRES: validate(cfg) succeeds.
  explicit scheduler(scheduler_config cfg);

  /// Queues a request at the back of the waiting queue. false (and nothing
  /// queued) when its request_id is already present. The caller validated it:
  /// non-empty prompt shorter than max_model_len, max_tokens > 0. A decode
  /// request that finds the queue empty is admitted at once when it fits, so
  /// its pull is ready without waiting for a step. A prefill request whose id
  /// is still held from an earlier attempt releases that hold.
  ///
  /// `guide`: the grammar state of a guided request (sampling.guided), past
  /// any output tokens the request carries; each sample is then drawn under
  /// its mask (batch_entry::allowed_tokens), and the choice ends with `stop`
  /// once the grammar has accepted EOS or can take no further byte.
  [[nodiscard]] bool add_request(protocol::preprocessed_request req, disagg_mode mode = {},
                                 std::optional<gram::matcher> guide = std::nullopt);

  [[nodiscard]] batch schedule();

  /// Applies the executor's result for `b` (the last schedule()): advances the
  /// computed tokens, registers full blocks, appends sampled tokens, applies
  /// stop rules and frees finished requests. `r.sampled` is aligned with
  /// b.entries; a missing sample where one was asked for ends that request
  /// with finish_reason::error.
  [[nodiscard]] std::vector<request_output> update(const batch& b, const batch_result& r);

  /// Drops a request (waiting, waiting for KV or running) and frees its
  /// blocks. false when unknown.
  [[nodiscard]] bool abort(std::string_view request_id);
  /// The prefill result of a decode request whose pull has not been handed
  /// out yet (nullopt otherwise): nobody will fetch it if the request goes.
  [[nodiscard]] std::optional<protocol::kv_prefill_result> unpulled_remote_prompt(std::string_view request_id) const;
  /// Drops every request; returns their ids (running first, then waiting for
  /// KV, then waiting). Holds are not touched (release_all_holds()).
  [[nodiscard]] std::vector<std::string> abort_all();

  /// The pulls queued since the last call, each returned once, in admission order.
  [[nodiscard]] std::vector<kv_pull> take_pulls();
  /// Ends a WAITING_FOR_KV request's transfer (see the class comment); the
  /// first-token chunk of a successful one is appended to `out`. false (nothing
  /// changes) when the request is unknown or not waiting for KV.
  [[nodiscard]] bool complete_transfer(std::string_view request_id, bool ok,
                                       std::vector<request_output>& out);

  /// The blocks held under `hold_id` (position order), nullopt when none.
  [[nodiscard]] std::optional<std::vector<uint32_t>> held_blocks(std::string_view hold_id) const;
  /// Frees a hold's blocks tail-first (back to the prefix cache). false when unknown.
  [[nodiscard]] bool release_hold(std::string_view hold_id);
  /// Frees every hold stamped at or before now - ttl; returns how many.
  size_t release_expired_holds(std::chrono::steady_clock::time_point now, std::chrono::milliseconds ttl);
  /// Frees every hold; returns how many.
  size_t release_all_holds();
  [[nodiscard]] size_t num_holds() const noexcept { return holds_.size(); }

  [[nodiscard]] bool has_requests() const noexcept { return !seqs_.empty(); }
  /// Requests that schedule() can make progress on: running or waiting (not
  /// WAITING_FOR_KV, which only complete_transfer() advances).
  [[nodiscard]] bool has_schedulable() const noexcept { return !running_.empty() || !waiting_.empty(); }
  [[nodiscard]] uint32_t num_running() const noexcept { return static_cast<uint32_t>(running_.size()); }
  [[nodiscard]] uint32_t num_waiting() const noexcept { return static_cast<uint32_t>(waiting_.size()); }
  [[nodiscard]] uint32_t num_waiting_for_kv() const noexcept {
    return static_cast<uint32_t>(kv_waiting_.size());
  }
  /// Tokens of waiting and prefilling requests whose KV is not computed yet.
  [[nodiscard]] uint32_t num_pending_prefill_tokens() const noexcept;
  [[nodiscard]] uint64_t num_preemptions() const noexcept { return num_preemptions_; }
  [[nodiscard]] const scheduler_config& config() const noexcept { return cfg_; }
  [[nodiscard]] const kv::kv_cache_manager& kv() const noexcept { return kv_; }
  [[nodiscard]] kv::kv_cache_manager& kv() noexcept { return kv_; }

private:
  [[nodiscard]] sequence& seq(uint64_t id) { return seqs_.at(id); }
  [[nodiscard]] batch_entry make_entry(sequence& s, uint32_t num_new);
  /// Tokens of a prefill chunk: all `remaining` when they fit in `budget`, else
  /// at most max_num_batched_tokens / max_num_partial_prefills.
  [[nodiscard]] uint32_t chunk_size(uint32_t remaining, uint32_t budget) const noexcept;
  void schedule_decodes(uint32_t& budget, std::vector<batch_entry>& out);
  /// Returns how many running requests stay mid-prefill after this step.
  [[nodiscard]] uint32_t schedule_prefills(uint32_t& budget, std::vector<batch_entry>& out);
  void admit_waiting(uint32_t& budget, uint32_t num_partial, std::vector<batch_entry>& out);
  /// Admits the decode request at the head of the waiting queue into
  /// WAITING_FOR_KV and queues its pull; false (nothing changes) when its
  /// blocks do not fit.
  [[nodiscard]] bool admit_for_kv(sequence& s);
  /// Moves a finished prefill's prompt blocks into a hold; returns the result
  /// to report (block ids, token count, first token).
  [[nodiscard]] protocol::kv_prefill_result hold(sequence& s, uint32_t first_token);
  /// Sequences running or waiting for KV, plus the choices their unforked
  /// n > 1 requests will add.
  [[nodiscard]] uint32_t num_admitted() const noexcept {
    return static_cast<uint32_t>(running_.size() + kv_waiting_.size()) + reserved_forks_;
  }
  /// Fresh blocks the fork at the end of `s`'s prompt takes when a chunk of
  /// `n` tokens completes it (one per fork when the prompt ends mid-block).
  [[nodiscard]] uint32_t fork_blocks(const sequence& s, uint32_t n) const noexcept;
  /// n, or n - 1 when n would complete the prompt but the fork's blocks do
  /// not fit besides the chunk's.
  [[nodiscard]] uint32_t fork_fitting(const sequence& s, uint32_t n) const;
  /// Appends `s`'s entry for `n` tokens to `out`, and the fork entries when
  /// this step completes an n > 1 prompt.
  void push_entry(sequence& s, uint32_t num_new, std::vector<batch_entry>& out);
  /// Creates choices 1..n-1 of `parent` (see the class comment).
  void fork_choices(sequence& parent, const batch_entry& parent_entry, std::vector<batch_entry>& out);
  /// The sequences of a request (choice order; finished ones are gone).
  struct request_group {
    std::vector<uint64_t> seqs;
    uint32_t unfinished = 1; ///< choices that have not ended
  };
  [[nodiscard]] sequence* first_seq(std::string_view request_id);
  [[nodiscard]] const sequence* first_seq(std::string_view request_id) const;
  /// Sets how `o` reports that `s` ended with `finish` (see the class comment).
  void end_choice(const sequence& s, protocol::finish_reason finish, protocol::engine_output& o);
  [[nodiscard]] std::chrono::steady_clock::time_point now() const {
    return cfg_.clock ? cfg_.clock() : std::chrono::steady_clock::now();
  }
  /// Newest running request at index > `after` (or any, with after = -1) not
  /// scheduled in this step; nullptr when none.
  [[nodiscard]] sequence* newest_unscheduled(std::ptrdiff_t after);
  void preempt(sequence& s);
  /// Largest n' <= n such that the table can cover num_computed + n' tokens.
  [[nodiscard]] uint32_t fitting_chunk(const sequence& s, uint32_t n) const;
  [[nodiscard]] protocol::finish_reason append_token(sequence& s, uint32_t token);
  void forget(uint64_t id);

  scheduler_config cfg_;
  kv::kv_cache_manager kv_;
  std::unordered_map<uint64_t, sequence> seqs_;
  std::unordered_map<std::string, request_group> by_request_id_;
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_; ///< admission order
  std::vector<uint64_t> kv_waiting_; ///< WAITING_FOR_KV, admission order
  std::vector<kv_pull> pulls_;       ///< not yet taken
  /// Blocks of aborted requests whose pull was already taken: a push may
  /// still write into them, so they stay in use until complete_transfer().
  std::unordered_map<std::string, std::vector<uint32_t>> orphaned_pulls_;

  struct kv_hold {
    std::vector<uint32_t> blocks; ///< position order
    std::chrono::steady_clock::time_point since;
  };
  std::unordered_map<std::string, kv_hold> holds_;
  uint32_t reserved_forks_ = 0; ///< pending_forks of running sequences
  std::vector<block_copy> pending_copies_;  ///< made by this step's forks, run by the next step
  std::vector<block_copy> inflight_copies_; ///< in the last batch; referenced until update()
  uint64_t next_seq_id_ = 1;
  uint64_t step_ = 0;
  uint64_t num_preemptions_ = 0;
};

} // namespace dynamo::engine
