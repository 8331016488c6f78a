// The continuous-batching scheduler (vLLM style) as a pure step function:
// schedule() picks this step's work as an engine::batch, update() applies the
// executor's result and says what each request produced. Owns the KV cache
// manager; consults an optional KV connector (runtime/kv/kv_connector.hpp) at
// fixed points for KV loaded from or saved to elsewhere. Driven by engine_core
// from one thread: not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/sequence.hpp"
#include "runtime/kv/kv_cache_manager.hpp"
#include "runtime/kv/kv_connector.hpp"
#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
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
};

/// config_error naming the first bad field, if any.
[[nodiscard]] expected<void> validate(const scheduler_config& cfg);

/// What one request produced in a step: its new token and/or its end.
struct request_output {
  std::string request_id;
  protocol::engine_output output;
  /// The final chunk of a request whose blocks the connector saved: what it
  /// returned (a disaggregated prefill's result: hold_id = request_id, block_ids,
  /// num_tokens, first_token); engine_core adds the layout and also encodes it
  /// into output.disagg.
  std::optional<protocol::kv_prefill_result> prefill_result;
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
/// An embed request (preprocessed_request::embed) is scheduled like any
/// prompt; the step that computes its last token asks the executor for that
/// token's hidden state (batch_entry::embed) instead of a sample, and the
/// request ends there with one chunk carrying it (finish stop).
///
/// KV connector (set_connector; runtime/kv/kv_connector.hpp). A waiting
/// request for which the connector matches tokens beyond the local prefix hit
/// is admitted in its turn, without using the token budget, into WAITING_FOR_KV:
/// blocks for its prompt are allocated (local prefix-cache hits first) and the
/// connector is told which of them receive the load (update_state_after_alloc).
/// It counts against max_num_seqs, is never scheduled nor preempted, until
/// finish_loads() applies the connector's get_finished():
///   ok:     the loaded tokens count as computed (and as cached prompt tokens
///           when the connector says they were this worker's own: KVBM), its
///           full blocks are registered (stored events), the connector's next
///           token (a disaggregated prefill's first token) is appended and
///           reported, and the request decodes like any other;
///   failed: the request keeps its blocks and prefills locally from its local
///           prefix hit. Keeping them (rather than freeing) means a late byte of
///           the failed transfer can only land in this request's own blocks,
///           which the local prefill then overwrites (planes/transfer/kv_transport.hpp).
/// A request that leaves asks the connector what to do with its blocks
/// (on_release): a completed one (stop or length, not error or abort) may be
/// saved (its prompt blocks detached into the connector), one leaving while its
/// load is under way is quarantined (its blocks detached into the connector,
/// which frees them when the load ends).
class scheduler {
public:
  /// REQUIRES: validate(cfg) succeeds.
  explicit scheduler(scheduler_config cfg);

  /// The connector to consult (nullptr: none); it must outlive the scheduler's
  /// requests. Set before the first request.
  void set_connector(kv::kv_connector* connector) noexcept { connector_ = connector; }

  /// Queues a request at the back of the waiting queue. false (and nothing
  /// queued) when its request_id is already present. The caller validated it:
  /// non-empty prompt shorter than max_model_len, max_tokens > 0. A request
  /// whose prompt the connector loads and that finds the queue empty is
  /// admitted at once when it fits, so its load is ready without waiting for a step.
  ///
  /// `guide`: the grammar state of a guided request (sampling.guided), past
  /// any output tokens the request carries; each sample is then drawn under
  /// its mask (batch_entry::allowed_tokens), and the choice ends with `stop`
  /// once the grammar has accepted EOS or can take no further byte.
  [[nodiscard]] bool add_request(protocol::preprocessed_request req,
                                 std::optional<gram::matcher> guide = std::nullopt);
  /// Whether `request_id` is in flight (waiting, waiting for KV or running).
  [[nodiscard]] bool contains(std::string_view request_id) const { return first_seq(request_id) != nullptr; }

  [[nodiscard]] batch schedule();

  /// Applies the executor's result for `b` (the last schedule()): advances the
  /// computed tokens, registers full blocks, appends sampled tokens, applies
  /// stop rules and frees finished requests. `r.sampled` is aligned with
  /// b.entries; a missing sample where one was asked for ends that request
  /// with finish_reason::error.
  [[nodiscard]] std::vector<request_output> update(const batch& b, const batch_result& r);

  /// Drops a request (waiting, waiting for KV or running): its blocks are
  /// freed, or quarantined by the connector. false when unknown.
  [[nodiscard]] bool abort(std::string_view request_id);
  /// Drops every request and frees their blocks (the connector forgets them:
  /// clear_requests); returns their ids (running first, then waiting for KV,
  /// then waiting).
  [[nodiscard]] std::vector<std::string> abort_all();

  /// Admits into WAITING_FOR_KV the requests at the head of the waiting queue
  /// whose prompt the connector loads, as schedule() would (first come first
  /// served: stops at the first that loads nothing or does not fit), so that
  /// a load that ends at once (KVBM's inline loads) can run in this very step.
  /// Returns how many it admitted.
  size_t admit_loads();

  /// Applies the connector's finished loads (see the class comment); the
  /// first-token chunks of successful ones are appended to `out`. Returns how
  /// many WAITING_FOR_KV requests it moved on.
  size_t finish_loads(std::vector<request_output>& out);

  [[nodiscard]] bool has_requests() const noexcept { return !seqs_.empty(); }
  /// Requests that schedule() can make progress on: running or waiting (not
  /// WAITING_FOR_KV, which only finish_loads() advances).
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
  /// The request at the head of the waiting queue, when the connector loads
  /// part of its prompt: admits it into WAITING_FOR_KV. nullopt: the connector
  /// loads nothing for it; false: it does, but its blocks do not fit (nothing changes).
  [[nodiscard]] std::optional<bool> admit_for_load(sequence& s);
  /// Ends `s`'s WAITING_FOR_KV (see the class comment).
  void finish_load(sequence& s, const kv::finished_load& f, std::vector<request_output>& out);
  /// A completed request asks the connector whether to save its prompt's
  /// blocks; when so, detaches them into it and returns what it reports.
  [[nodiscard]] std::optional<protocol::kv_prefill_result> release_completed(sequence& s, uint32_t last_token);
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
  /// Newest running request at index > `after` (or any, with after = -1) not
  /// scheduled in this step; nullptr when none.
  [[nodiscard]] sequence* newest_unscheduled(std::ptrdiff_t after);
  void preempt(sequence& s);
  /// Largest n' <= n such that the table can cover num_computed + n' tokens.
  [[nodiscard]] uint32_t fitting_chunk(const sequence& s, uint32_t n) const;
  [[nodiscard]] protocol::finish_reason append_token(sequence& s, uint32_t token);
  /// Appends the prompt logprobs the executor computed for entry `e` of `s`
  /// (`lps`, aligned with e.prompt_targets) that `s` does not hold yet.
  static void gather_prompt_logprobs(sequence& s, const batch_entry& e, std::span<const protocol::token_logprob> lps);
  /// The one chunk of an embed request: `embedding` (error when empty), finish stop.
  [[nodiscard]] request_output embedding_output(sequence& s, std::vector<float> embedding);
  void forget(uint64_t id);

  scheduler_config cfg_;
  kv::kv_cache_manager kv_;
  std::unordered_map<uint64_t, sequence> seqs_;
  std::unordered_map<std::string, request_group> by_request_id_;
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_; ///< admission order
  std::vector<uint64_t> kv_waiting_; ///< WAITING_FOR_KV, admission order
  kv::kv_connector* connector_ = nullptr;
  uint32_t reserved_forks_ = 0; ///< pending_forks of running sequences
  std::vector<block_copy> pending_copies_;  ///< made by this step's forks, run by the next step
  std::vector<block_copy> inflight_copies_; ///< in the last batch; referenced until update()
  uint64_t next_seq_id_ = 1;
  uint64_t step_ = 0;
  uint64_t num_preemptions_ = 0;
};

} // namespace dynamo::engine
