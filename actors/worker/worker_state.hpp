// Internal to actors/worker: the worker actor's state and the helpers shared
// by its two translation units (the step loop in worker_actor.cpp, the
// disaggregation hand-off in worker_disagg.cpp). Touched only by the actor.
#pragma once

#include "actors/worker/worker_actor.hpp"

#include <caf/stateful_actor.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

namespace dynamo::actors::internal {

using step_atom = caf::atom_constant<caf::atom("step")>;
using deliver_atom = caf::atom_constant<caf::atom("deliver")>;
using housekeep_atom = caf::atom_constant<caf::atom("housekeep")>;
using pull_done_atom = caf::atom_constant<caf::atom("pulldone")>;
using push_done_atom = caf::atom_constant<caf::atom("pushdone")>;
using clock = std::chrono::steady_clock;

struct worker_state {
  worker_config cfg;
  worker_hooks hooks;
  std::unique_ptr<engine::engine_core> engine;
  std::unordered_map<std::string, std::shared_ptr<output_sink>> sinks;
  engine::step_result pending; ///< a simulated step's results, delivered after its delay
  bool step_scheduled = false;
  bool healthy = true;
  bool draining = false;
  clock::time_point last_load{};
  static inline const char* name = "dynamo.worker";
};

using worker_ptr = caf::stateful_actor<worker_state>*;

void schedule_step(worker_ptr self);
/// Sends chunks to their sinks now (outside a step: a transfer's first token).
void deliver_now(worker_ptr self, std::vector<engine::request_output> outputs);

// worker_disagg.cpp
/// Completes a prefill result in a final chunk with this worker's address.
void fill_prefill_result(worker_ptr self, protocol::engine_output& chunk);
/// Starts the transfers the engine is waiting for (decode role).
void start_pending_pulls(worker_ptr self);
/// Tells a prefill worker to free a hold this worker will not pull (the
/// engine refused it, e.g. a layout mismatch, and prefills locally).
void release_remote_hold(worker_ptr self, const protocol::kv_prefill_result& source);
/// Serves a decode worker's kv_push (prefill role).
void handle_kv_push(worker_ptr self, const kv_push_job_ptr& job);
void handle_push_done(worker_ptr self, const kv_push_job_ptr& job,
                      const protocol::kv_transfer_status& status);
void handle_pull_done(worker_ptr self, const std::string& request_id, bool ok, const std::string& why);
/// Frees held prefill blocks nobody came for.
void expire_holds(worker_ptr self);

} // namespace dynamo::actors::internal

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::protocol::kv_transfer_status)
