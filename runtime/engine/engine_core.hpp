// The engine of one worker: a scheduler driving an executor step by step,
// turning requests into response chunks and KV events, with the KV connectors
// plugged into the scheduler: disaggregated serving's (runtime/disagg: saved
// prefill blocks, decode requests waiting for their KV) and, when configured,
// the KV block manager's (runtime/kvbm: host and disk tiers), chained. Called by the
// worker actor (or a simulation): add_request()/abort() and the transfer calls
// as messages arrive, step() while has_work(). One thread owns and drives it:
// not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/disagg/disagg_connector.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/scheduler.hpp"
#include "runtime/grammar/guided.hpp"
#include "runtime/kv/connector_chain.hpp"
#include "runtime/kvbm/kvbm_connector.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/llm.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dynamo::engine {

/// Engine settings; the KV geometry and context length come from the executor.
struct engine_config {
  uint32_t max_num_seqs = 256;            ///< running requests at most
  uint32_t max_num_batched_tokens = 8192; ///< tokens per step (vLLM's OpenAI server default)
  uint32_t max_num_partial_prefills = 1;  ///< see scheduler_config (concurrent chunked prefills)
  bool enable_prefix_caching = true;
  bool emit_kv_events = true;
  uint32_t num_blocks = 0;    ///< 0: every block of the executor; else at most that many
  uint32_t max_model_len = 0; ///< 0: the executor's context length; else at most that
  /// Held prefill blocks not released within this are freed (release_expired_holds).
  std::chrono::milliseconds hold_ttl{30000};
  /// Compiled grammars for guided decoding (sampling.guided), over the
  /// model's vocabulary; may be shared by the engines of one model. Null: a
  /// guided request is answered by an error chunk.
  std::shared_ptr<gram::grammar_cache> grammars;
  /// Stamps holds when they are created; empty: steady_clock::now. Tests inject one.
  std::function<std::chrono::steady_clock::time_point()> clock;
  /// The KV block manager's tiers (off unless a capacity is set). Needs prefix
  /// caching and KV in host memory (the CPU engine) or no KV bytes (the
  /// mocker: tiers of hashes only); elsewhere it is left off with a warning.
  kvbm::kvbm_config kvbm;
};

/// What one step produced.
struct step_result {
  /// Chunks in the order they happened; a request's last chunk has finish != none.
  /// Also carries error chunks of rejected requests and `cancelled` chunks of
  /// aborted ones, queued since the previous step.
  std::vector<request_output> outputs;
  std::vector<protocol::kv_event> kv_events; ///< to publish on the event plane, in order
  std::chrono::microseconds duration{0};     ///< simulated time (mocker); 0 for real executors
  uint32_t num_tokens = 0;                   ///< tokens computed in this step
  uint32_t num_seqs = 0;                     ///< sequences in this step's batch
};

class engine_core {
public:
  /// Checks the configuration against the executor (config_error otherwise).
  [[nodiscard]] static expected<std::unique_ptr<engine_core>> create(std::unique_ptr<executor> exec,
                                                                     engine_config cfg = {});
  /// The longest sequence (prompt + output) one request may have on `exec`
  /// under `cfg`: its context length, `cfg.max_model_len`, and what the KV
  /// cache holds (a lone sequence must always fit, or it could never finish).
  /// What create()'s engine enforces and what a worker's model card publishes.
  [[nodiscard]] static uint32_t max_model_len_of(const executor& exec, const engine_config& cfg) noexcept;

  /// Queues a request. A request that cannot run (empty prompt, prompt not
  /// shorter than the context length, max_tokens 0, `disagg` bytes that do not
  /// decode, n of 0 or above max_num_seqs, n > 1 with a disaggregation role,
  /// more than max_top_logprobs alternatives or max_logit_bias biases, an
  /// embed request with n > 1, a grammar or a disaggregation role, or on an
  /// executor that does not compute embeddings) is accepted and answered by
  /// one error chunk in the next step(). An embed request ignores max_tokens.
  /// Error (invalid_argument, nothing queued) only when request_id is already
  /// in flight.
  ///
  /// `disagg` (protocol::disagg_params) selects the role:
  ///  - prefill: runs with max_tokens 1; its final chunk carries, in
  ///    output.disagg (and request_output::prefill_result), a
  ///    protocol::kv_prefill_result: hold_id = request_id, the prompt's blocks
  ///    (position order, last partial block included), num_tokens (the prompt),
  ///    first_token and the executor's kv_transfer_layout() (default-constructed
  ///    when it has none, which no decode worker accepts). prefill_worker_id and
  ///    transfer_* are left for the worker. The blocks stay held, counted as
  ///    used and never evicted, until release_hold() or expiry.
  ///  - decode with a prefill result: WAITING_FOR_KV (see scheduler), its
  ///    transfer listed by pending_transfers(). A result this engine cannot use
  ///    (no or another layout, other block size, num_tokens != prompt length,
  ///    wrong block count) or a decode role without one is logged and the
  ///    request is prefilled locally instead.
  [[nodiscard]] expected<void> add_request(protocol::preprocessed_request req);

  /// Stops a request and frees its blocks; its stream gets a final `cancelled`
  /// chunk in the next step(). false when it is not in flight (already finished).
  [[nodiscard]] bool abort(std::string_view request_id);

  /// Schedules, executes and applies one step. An executor error fails every
  /// request (each gets an error chunk, delivered by the next step()) and is
  /// returned; the worker should then report itself unhealthy.
  [[nodiscard]] expected<step_result> step();

  /// Chunks produced outside step() (a finished transfer's first token, an
  /// abort's final chunk), taken now so that the worker can send them without
  /// waiting for the next forward pass; step() returns whatever is not taken.
  [[nodiscard]] std::vector<request_output> take_pending();

  /// True while step() has something to do: requests queued or running,
  /// chunks waiting to be delivered, or KVBM onboards under way (a step with
  /// nothing else waits a little for them). Requests waiting for a transfer and
  /// held blocks do not count: only complete_transfer() / release_hold() advance them.
  [[nodiscard]] bool has_work() const noexcept;

  // --- Disaggregation, prefill side: the connector's saves (docs/KV.md). ----
  // The worker-facing names (hold, transfer) are the wire protocol's; each is
  // a forward to the disagg connector.

  /// The blocks held under `hold_id` (position order), nullopt when none.
  [[nodiscard]] std::optional<std::vector<uint32_t>> held_blocks(std::string_view hold_id) const {
    return connector_.saved_blocks(hold_id);
  }
  /// Frees a hold tail-first (its registered blocks go back to the prefix
  /// cache, as for any finished request). false when unknown.
  [[nodiscard]] bool release_hold(std::string_view hold_id) { return connector_.release(hold_id); }
  /// Frees every hold created at or before now - ttl (a decode worker that never
  /// pulled); returns how many. The worker calls it every step.
  size_t release_expired_holds(std::chrono::steady_clock::time_point now, std::chrono::milliseconds ttl) {
    return connector_.release_expired(now, ttl);
  }
  /// The same with engine_config::hold_ttl.
  size_t release_expired_holds(std::chrono::steady_clock::time_point now) {
    return release_expired_holds(now, hold_ttl_);
  }
  [[nodiscard]] std::chrono::milliseconds hold_ttl() const noexcept { return hold_ttl_; }
  [[nodiscard]] size_t num_holds() const noexcept { return connector_.num_saved(); }

  // --- Disaggregation, decode side: the connector's loads (docs/KV.md). -----

  /// Transfers (the connector's loads) to start, each returned once.
  [[nodiscard]] std::vector<disagg::kv_load> pending_transfers() { return connector_.take_loads(); }
  /// Prefill results this engine will never pull (it refused them and
  /// prefills locally, or their request was aborted before its pull started):
  /// their holds should be released. Drains the list.
  [[nodiscard]] std::vector<protocol::kv_prefill_result> take_refused_prefills() {
    return connector_.take_refused();
  }
  /// Ends a transfer of a WAITING_FOR_KV request. ok: the prompt counts as
  /// computed, its full blocks are registered (stored events in the next
  /// step()), and first_token is the request's first generated token,
  /// delivered by the next step() as its first chunk (cached_tokens: the prompt
  /// tokens found in the local prefix cache); decoding goes on from there.
  /// Not ok: the request prefills locally into the blocks it holds (its first
  /// chunk says prefilled_locally, as when add_request refused the result). false when
  /// the request is not waiting for KV (aborted, finished, unknown). The
  /// connector's finish_load, then the scheduler's finish_loads (get_finished).
  [[nodiscard]] bool complete_transfer(std::string_view request_id, bool ok);

  /// Load report; worker_id is left 0 for the caller to fill in.
  [[nodiscard]] protocol::load_metrics load_metrics() const noexcept;

  /// KV events not yet returned by a step: those of blocks found at start
  /// (KVBM's disk tier, from an earlier run), for the worker to announce
  /// before any request comes. step() returns the rest.
  [[nodiscard]] std::vector<protocol::kv_event> take_kv_events() { return sched_.kv().drain_events(); }

  /// The KV block manager, when on (its counters and tiers, for metrics).
  [[nodiscard]] const kvbm::kvbm_connector* kvbm() const noexcept { return kvbm_.get(); }

  [[nodiscard]] uint32_t max_model_len() const noexcept { return sched_.config().max_model_len; }
  [[nodiscard]] const scheduler& sched() const noexcept { return sched_; }
  [[nodiscard]] executor& exec() noexcept { return *exec_; }

private:
  engine_core(std::unique_ptr<executor> exec, const scheduler_config& cfg,
              std::chrono::milliseconds hold_ttl, disagg::disagg_connector::clock_fn clock,
              std::shared_ptr<gram::grammar_cache> grammars);
  [[nodiscard]] std::string rejection(const protocol::preprocessed_request& req) const;
  /// Whether the prompt leaves no room for an output token in the context
  /// (rejection() names it; its error_code is errc::context_length_exceeded).
  [[nodiscard]] bool exceeds_context(const protocol::preprocessed_request& req) const noexcept {
    return req.token_ids.size() >= max_model_len();
  }
  /// rejection() for a request with sampling.prompt_logprobs: what this
  /// executor and the request's shape do not allow ("" when fine).
  [[nodiscard]] std::string prompt_logprobs_rejection(const protocol::preprocessed_request& req) const;
  /// The grammar state of a guided request past its output tokens (nullopt
  /// when it is not guided), or why it cannot run.
  [[nodiscard]] expected<std::optional<gram::matcher>> guide_of(const protocol::preprocessed_request& req);
  /// Tells the connector the request's role; "" or why the request cannot run.
  [[nodiscard]] std::string apply_disagg(protocol::preprocessed_request& req, bool& save);
  /// Adds the layout to each prefill result and encodes it into output.disagg.
  void attach_prefill_results(std::vector<request_output>& outs);
  /// Sets output.prefilled_locally on the first chunk of each request in local_prefills_.
  void flag_local_prefills(std::vector<request_output>& outs);
  void fail_all(const std::string& message);
  /// Chains the KV block manager behind the disagg connector; an executor or
  /// configuration it cannot serve leaves it off (logged).
  [[nodiscard]] expected<void> enable_kvbm(kvbm::kvbm_config cfg, kvbm::kvbm_connector::clock_fn clock);
  /// KVBM's part of a step: onboards that ended, before scheduling.
  void kvbm_before_schedule(std::vector<request_output>& out);
  /// The executor's simulated time for the blocks onboarded since the last call.
  [[nodiscard]] std::chrono::microseconds kvbm_onboard_time();

  std::unique_ptr<executor> exec_;
  scheduler sched_;
  disagg::disagg_connector connector_; ///< over sched_'s KV cache; plugged into sched_
  std::chrono::milliseconds hold_ttl_;
  std::shared_ptr<gram::grammar_cache> grammars_;
  std::vector<request_output> pending_; ///< chunks produced outside step()
  /// After exec_: its I/O thread stops before the KV memory it writes goes.
  std::unique_ptr<kvbm::kvbm_connector> kvbm_;
  std::unique_ptr<kv::connector_chain> chain_; ///< connector_ then kvbm_, when kvbm_ is on
  /// Decode requests whose prefill result went unused (refused, failed
  /// transfer) and whose first chunk has not been produced yet.
  std::unordered_set<std::string> local_prefills_;
};

} // namespace dynamo::engine
