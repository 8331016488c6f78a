// The router actor: owns a route::kv_router (prefix index, predicted load,
// selector for kv / round-robin / random) and the table of worker instances
// serving one model, fed by discovery and the event plane. It answers route
// jobs by picking an instance and starting the request-plane call itself;
// chunks then flow from the request plane's I/O thread straight to the job's
// callbacks, and only lifecycle notes (first token, end) come back here.
// Interaction by message only; see routed_client for the llm_client face.
#pragma once

#include "actors/core/actor_handle.hpp"
#include "actors/router/kv_event_inbox.hpp"
#include "planes/request/request_plane.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/route/config.hpp"
#include "runtime/route/router_metrics.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::actors {

using add_worker_atom = caf::atom_constant<caf::atom("addworker")>;
using remove_worker_atom = caf::atom_constant<caf::atom("rmworker")>;
using kv_events_atom = caf::atom_constant<caf::atom("kvevents")>; ///< drain a kv_event_inbox
using route_atom = caf::atom_constant<caf::atom("route")>;
using workers_atom = caf::atom_constant<caf::atom("workers")>;
using peek_atom = caf::atom_constant<caf::atom("peek")>;
/// A worker's load_metrics (topic "kv_metrics"): its KV capacity, with --router-kv-capacity.
using worker_load_atom = caf::atom_constant<caf::atom("wload")>;

/// One worker instance as discovery describes it.
struct worker_info {
  uint64_t instance_id = 0;
  std::string address;       ///< request-plane address
  std::string endpoint_path; ///< e.g. "dynamo/backend/generate"
  bool healthy = true;       ///< unhealthy or draining instances get no new requests
  /// Its model card's context_length (prompt + output tokens); 0: unknown. A
  /// request whose tokens do not fit goes to an instance they fit when one exists.
  uint32_t context_length = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_info& x) {
  return f(caf::meta::type_name("worker_info"), x.instance_id, x.address, x.endpoint_path, x.healthy,
           x.context_length);
}

/// What a routed call reports back to whoever asked for it. Called on the
/// request plane's I/O thread (or inside the router for immediate failures).
struct route_callbacks {
  /// The chosen instance, before the call starts.
  std::function<void(uint64_t instance_id)> on_routed;
  std::function<void(protocol::engine_output)> on_chunk;
  /// Exactly once: empty error when the stream ended with a final chunk.
  std::function<void(const caf::error&)> on_end;
};

/// Shared between a routed call and its owner, so cancel() reaches the call.
struct route_job {
  protocol::preprocessed_request request;
  route_callbacks callbacks;
  std::vector<uint64_t> exclude;          ///< instances to avoid (failed before) when others exist
  route::router_config_override overrides; ///< per-request routing knobs (disagg decode: weight 0)
  std::mutex mtx;
  planes::call_handle call;               ///< set once the call started
  bool cancelled = false;

  /// Cancels the call if it started; otherwise the router drops the job.
  void cancel();
};
using route_job_ptr = std::shared_ptr<route_job>;

/// A read-only question to the router: the longest prefix of `tokens` cached
/// on any of its workers. The answer (in tokens) goes to `answer` exactly
/// once, on the router's thread; a question the router never saw is answered
/// 0 when it is dropped.
struct peek_job {
  std::vector<uint32_t> tokens;
  std::function<void(uint32_t cached_tokens)> answer;
  ~peek_job() {
    if (answer)
      answer(0);
  }
};
using peek_job_ptr = std::shared_ptr<peek_job>;

struct router_actor_config {
  std::string name = "router";
  route::router_mode mode = route::router_mode::round_robin;
  route::kv_router_config kv;
  uint32_t block_size = 16;
  uint64_t seed = 0;                         ///< 0: random
  std::chrono::milliseconds quarantine{2000}; ///< how long an unreachable instance is skipped
  /// How long a job waits for a worker when none is available (restarts,
  /// joins) before failing with errc::no_workers; 0 fails at once.
  std::chrono::milliseconds no_worker_wait{3000};
  /// Where the router publishes its KV index totals (about once a second); none when null.
  std::shared_ptr<route::router_metrics> metrics;
  /// Answers resync requests for workers whose KV events this process relays
  /// itself (vllm_kv_relay); nullopt, or unset: ask the worker's kv_resync endpoint.
  std::function<std::optional<protocol::kv_replay>(const protocol::kv_resync_request&)> local_resync;
};

[[nodiscard]] caf::actor spawn_router(caf::actor_system& sys, router_actor_config cfg,
                                      std::shared_ptr<planes::request_client> client);

/// A router under its own supervisor (restarted if it crashes); `handle`
/// names the current incarnation. `on_restart(handle)` runs (in the
/// supervisor) after every restart, to give the new router its workers again.
struct supervised_router {
  caf::actor supervisor;
  std::shared_ptr<actor_handle> handle;
};
[[nodiscard]] supervised_router spawn_supervised_router(caf::actor_system& sys, router_actor_config cfg,
                                                        std::shared_ptr<planes::request_client> client,
                                                        std::function<void(const std::shared_ptr<actor_handle>&)> on_restart);

/// Sends `job` to the router (after `delay`). A job that the router never
/// takes (it died first, or the message could not be delivered) ends with
/// errc::disconnected instead of waiting forever, so its owner can retry.
void send_route(const caf::actor& router, route_job_ptr job,
                std::chrono::milliseconds delay = std::chrono::milliseconds{0});

/// A route job in transit: fails the job when dropped untaken. Internal to
/// send_route and the router actor.
struct route_ticket {
  route_job_ptr job;
  ~route_ticket();
};
using route_ticket_ptr = std::shared_ptr<route_ticket>;

} // namespace dynamo::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::actors::route_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::actors::route_ticket_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::actors::peek_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::actors::kv_event_inbox_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::protocol::kv_replay)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::protocol::load_metrics)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dynamo::protocol::kv_resync_request)
