// Hosts the workers of one pool inside a process: per worker an engine (from
// a factory), a supervised worker actor, a request-plane server, an event-plane
// publisher (topics "kv-events" and "kv_metrics") and a discovery registration
// carrying the model card, so frontends and routers find it. Health changes of
// a worker (executor errors, drain) are written to its discovery record;
// requests and load reports are counted in the given component metrics.
// Create and destroy from one thread (main); the pieces it wires are thread-safe.
#pragma once

#include "actors/worker/kv_event_log.hpp"
#include "actors/worker/worker_actor.hpp"
#include "planes/discovery/discovery_plane.hpp"
#include "runtime/core/secret.hpp"
#include "runtime/metrics/component_metrics.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/model_card.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace dynamo::actors {

using protocol::load_metrics_topic;

struct worker_service_config {
  std::string namespace_name = "dynamo";
  std::string component = "backend";   ///< pool name
  std::string endpoint = "generate";
  protocol::disagg_role role = protocol::disagg_role::aggregated; ///< published as metadata "role"
  protocol::model_card card;           ///< published as the record's payload
  std::string plane_host = "127.0.0.1"; ///< where its request, event and KV transfer sockets bind
  std::string advertise_host;           ///< the host published for them ("": plane_host)
  uint32_t num_workers = 1;
  bool detached = false;               ///< one thread per worker (real executors)
  protocol::kv_transport_kind kv_transport = protocol::kv_transport_kind::automatic; ///< disaggregation
  /// Counts requests and load per worker (dynamo_component_*); null: none.
  std::shared_ptr<metrics::component_metrics> metrics;
  /// The process's system server ("http://host:port"), published in each
  /// record's metadata as "system"; "": none.
  std::string system_url;
  /// The process's admin API ("http://host:port"), published in each record's
  /// metadata as admin::admin_url_key ("admin") so that any admin API can
  /// forward a drain here; "": none.
  std::string admin_url;
  /// The cluster's CURVE keys (security.curve): its request and event sockets
  /// admit only peers holding them. Unset: open.
  std::optional<curve_keypair> curve;
};

/// Makes the engine factory of worker `index` (0-based).
using engine_factory_maker = std::function<engine_factory(uint32_t index)>;

class worker_service {
public:
  [[nodiscard]] static expected<std::unique_ptr<worker_service>>
  start(caf::actor_system& sys, planes::discovery_plane& discovery, worker_service_config cfg,
        engine_factory_maker make_factory);

  ~worker_service();
  worker_service(const worker_service&) = delete;
  worker_service& operator=(const worker_service&) = delete;

  /// Instance ids of the workers, in index order.
  [[nodiscard]] std::vector<uint64_t> instance_ids() const;
  /// The supervisor of worker `index` (admin API, tests).
  [[nodiscard]] caf::actor supervisor(uint32_t index) const;
  /// Every worker's supervisor with its name ("<pool>-<index>-supervisor").
  [[nodiscard]] std::vector<std::pair<std::string, caf::actor>> supervisors() const;
  /// The index of the worker with instance id `id`, if hosted here.
  [[nodiscard]] std::optional<uint32_t> index_of(uint64_t id) const;
  /// The current worker actor of `index` (changes after a restart).
  [[nodiscard]] caf::actor worker(uint32_t index) const;
  /// Drain (true) stops new requests and marks the record draining; false undoes it.
  void set_draining(uint32_t index, bool draining);
  /// Each worker's instance id and published health (the system server's /health).
  [[nodiscard]] std::vector<std::pair<uint64_t, planes::health_state>> health() const;
  /// Requests in flight on worker `index` (0 when it cannot be asked).
  [[nodiscard]] uint32_t inflight(uint32_t index) const;
  /// Graceful stop: drains every worker, waits up to `grace` for in-flight
  /// requests to finish, then deregisters. Returns the requests still running.
  uint32_t shutdown(std::chrono::milliseconds grace);
  [[nodiscard]] uint32_t size() const noexcept;

  struct slot; ///< internal

private:
  worker_service() = default;
  caf::actor_system* sys_ = nullptr;
  std::vector<std::unique_ptr<slot>> slots_;
};

} // namespace dynamo::actors
