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

#include <cstdint>
#include <deque>
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
class scheduler {
public:
  /// REQUIRES: validate(cfg) succeeds.
  explicit scheduler(scheduler_config cfg);

  /// Queues a request at the back of the waiting queue. false (and nothing
  /// queued) when its request_id is already present. The caller validated it:
  /// non-empty prompt shorter than max_model_len, max_tokens > 0.
  [[nodiscard]] bool add_request(protocol::preprocessed_request req);

  [[nodiscard]] batch schedule();

  /// Applies the executor's result for `b` (the last schedule()): advances the
  /// computed tokens, registers full blocks, appends sampled tokens, applies
  /// stop rules and frees finished requests. `r.sampled` is aligned with
  /// b.entries; a missing sample where one was asked for ends that request
  /// with finish_reason::error.
  [[nodiscard]] std::vector<request_output> update(const batch& b, const batch_result& r);

  /// Drops a request (waiting or running) and frees its blocks. false when unknown.
  [[nodiscard]] bool abort(std::string_view request_id);
  /// Drops every request; returns their ids (running first, then waiting).
  [[nodiscard]] std::vector<std::string> abort_all();

  [[nodiscard]] bool has_requests() const noexcept { return !seqs_.empty(); }
  [[nodiscard]] uint32_t num_running() const noexcept { return static_cast<uint32_t>(running_.size()); }
  [[nodiscard]] uint32_t num_waiting() const noexcept { return static_cast<uint32_t>(waiting_.size()); }
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
  std::unordered_map<std::string, uint64_t> by_request_id_;
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_; ///< admission order
  uint64_t next_seq_id_ = 1;
  uint64_t step_ = 0;
  uint64_t num_preemptions_ = 0;
};

} // namespace dynamo::engine
