// The engine of one worker: a scheduler driving an executor step by step,
// turning requests into response chunks and KV events. Called by the worker
// actor (or a simulation): add_request()/abort() as messages arrive, step()
// while has_work(). One thread owns and drives it: not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/scheduler.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/llm.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
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

  /// Queues a request. A request that cannot run (empty prompt, prompt not
  /// shorter than the context length, max_tokens 0) is accepted and answered
  /// by one error chunk in the next step(). Error (invalid_argument, nothing
  /// queued) only when request_id is already in flight.
  [[nodiscard]] expected<void> add_request(protocol::preprocessed_request req);

  /// Stops a request and frees its blocks; its stream gets a final `cancelled`
  /// chunk in the next step(). false when it is not in flight (already finished).
  [[nodiscard]] bool abort(std::string_view request_id);

  /// Schedules, executes and applies one step. An executor error fails every
  /// request (each gets an error chunk, delivered by the next step()) and is
  /// returned; the worker should then report itself unhealthy.
  [[nodiscard]] expected<step_result> step();

  /// True while requests are queued or running, or chunks wait for step().
  [[nodiscard]] bool has_work() const noexcept;

  /// Load report; worker_id is left 0 for the caller to fill in.
  [[nodiscard]] protocol::load_metrics load_metrics() const noexcept;

  [[nodiscard]] uint32_t max_model_len() const noexcept { return sched_.config().max_model_len; }
  [[nodiscard]] const scheduler& sched() const noexcept { return sched_; }
  [[nodiscard]] executor& exec() noexcept { return *exec_; }

private:
  engine_core(std::unique_ptr<executor> exec, const scheduler_config& cfg);
  [[nodiscard]] std::string rejection(const protocol::preprocessed_request& req) const;
  void fail_all(const std::string& message);

  std::unique_ptr<executor> exec_;
  scheduler sched_;
  std::vector<request_output> pending_; ///< chunks produced outside step()
};

} // namespace dynamo::engine
