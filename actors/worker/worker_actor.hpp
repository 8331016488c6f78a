// The worker actor: owns one engine_core (mocker, CPU or CUDA executor) and
// runs its step loop, turning `generate` jobs into chunks on each job's
// output_sink, publishing KV events and load metrics through hooks. A
// simulated step time (mocker) is honoured by delivering that step's chunks
// after the delay, without blocking a thread. Real executors block while they
// compute, so spawn those workers detached (own thread); messages that arrive
// meanwhile (an abort of a request whose client left, a new request) are
// handled before the next step, so the engine's per-step token budget bounds
// how long they wait. All interaction is by message; hooks and sinks are
// called inside the actor.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/engine_core.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/llm.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dynamo::actors {

using generate_atom = caf::atom_constant<caf::atom("generate")>;
using abort_atom = caf::atom_constant<caf::atom("abort")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;     ///< (bool on)
using inflight_atom = caf::atom_constant<caf::atom("inflight")>; ///< -> uint32_t requests in flight

/// Where one request's chunks go (the request-plane bridge, or a test).
/// Called only from inside the worker actor.
class output_sink {
public:
  virtual ~output_sink() = default;
  /// Delivers one chunk; false when the consumer is gone (the worker then aborts
  /// the request). The chunk with finish != none is the last one.
  [[nodiscard]] virtual bool send(const protocol::engine_output& chunk) = 0;
};

/// A request plus its sink, sent to the worker as one message.
struct generate_job {
  protocol::preprocessed_request request;
  std::shared_ptr<output_sink> sink;
};
using generate_job_ptr = std::shared_ptr<generate_job>;

/// Outbound side effects of the worker; all run inside the actor and must not block.
struct worker_hooks {
  std::function<void(std::vector<protocol::kv_event>)> on_kv_events;
  std::function<void(const protocol::load_metrics&)> on_load;
  /// Health changes: false with the reason after an executor error.
  std::function<void(bool healthy, const std::string& reason)> on_health;
  /// Each engine step that ran a batch: its time (wall; the mocker's
  /// simulated time) and the tokens it computed. On the worker's thread.
  std::function<void(std::chrono::duration<double> took, uint32_t tokens)> on_step;
};

using engine_factory = std::function<expected<std::unique_ptr<engine::engine_core>>()>;

class kv_handoff;

struct worker_config {
  uint64_t instance_id = 0;
  std::string name = "worker";
  std::chrono::milliseconds load_interval{100}; ///< load metrics at most this often
  /// ... and at least this often, idle or not (housekeeping publishes them),
  /// so the planner can tell an idle worker from a silent one.
  std::chrono::milliseconds load_heartbeat{1000};
  bool detached = false;                        ///< own thread (real executors)
  // Disaggregation (research/dynamo.md 4):
  protocol::disagg_role role = protocol::disagg_role::aggregated;
  std::string transfer_address;                 ///< this worker's request-plane address
  std::string kv_push_endpoint;                 ///< path of its kv_push endpoint (prefill role)
  std::shared_ptr<kv_handoff> handoff;          ///< transfer objects (prefill and decode roles)
  std::chrono::milliseconds hold_ttl{30'000};   ///< held prefill blocks are freed after this
};

/// A decode worker's kv_push request, with the stream to answer on.
struct kv_push_job {
  protocol::kv_push_request request;
  std::shared_ptr<void> stream; ///< planes::response_stream (kept opaque here)
  std::function<void(const protocol::kv_transfer_status&)> reply;
};
using kv_push_job_ptr = std::shared_ptr<kv_push_job>;

using kv_push_atom = caf::atom_constant<caf::atom("kvpush")>;

/// Spawns a worker. The engine is created inside the actor by `factory`; a
/// factory error stops the actor with that error (a supervisor then retries).
[[nodiscard]] caf::actor spawn_worker(caf::actor_system& sys, worker_config cfg,
                                      engine_factory factory, worker_hooks hooks);

} // namespace dynamo::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::actors::generate_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::actors::kv_push_job_ptr)
