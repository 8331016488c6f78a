// The routers' KV indexes on /metrics: events applied by type and status (Dynamo's
// kv_cache_events_applied{status}), (worker, block) entries and workers indexed,
// KV events dropped before they reached a router, and the KV-capacity rule with
// the capacity learned per worker (also read by the admin API). Created once per
// process on the frontend's registry (which it keeps alive); each router actor
// publishes into it about once a second and when a capacity or a worker changes.
// Thread rules: every method is safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/metrics/registry.hpp"
#include "runtime/route/kv_indexer.hpp"
#include "runtime/route/kv_router.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::route {

class router_metrics {
public:
  /// Registers the families `<prefix>_kv_events_applied_total{router,event_type,status}`,
  /// `<prefix>_kv_index_entries{router}`, `<prefix>_kv_index_workers{router}`,
  /// `<prefix>_kv_events_dropped_total{router}`, `<prefix>_kv_capacity_rule{router}`
  /// and `<prefix>_worker_kv_capacity_blocks{router,worker_id,dp_rank}` in `reg`.
  [[nodiscard]] static expected<std::shared_ptr<router_metrics>>
  create(std::shared_ptr<metrics::registry> reg, const std::string& prefix = "dynamo_router");

  /// What one router incarnation has published so far: its counters advance by
  /// what is new since then, so a restarted router (whose index starts empty)
  /// starts a fresh cursor and the series keep growing.
  struct cursor {
    std::array<std::array<uint64_t, 4>, 3> applied{}; ///< [event kind][apply_status]
    uint64_t dropped = 0;
  };

  /// Publishes the totals of router `name`: its index, and `dropped`, the events
  /// its inbox has dropped so far.
  void publish(const std::string& name, const kv_indexer& index, uint64_t dropped, cursor& last);

  /// Router `name`'s KV-capacity rule and what it has learned
  /// (kv_router::worker_capacities): `<prefix>_kv_capacity_rule{router}` 1 when
  /// router_kv_capacity is on in kv mode (where it applies), else 0, and one series of
  /// `<prefix>_worker_kv_capacity_blocks` per (worker, dp rank) whose capacity
  /// it knows; the series of one it no longer knows (the worker left, or a
  /// restarted router has not heard from it yet) are removed. `workers`: the
  /// instances it routes to (for routed_workers()).
  void publish_capacities(const std::string& name, const kv_router& router, std::vector<uint64_t> workers);

  /// What a router of this process knows of an instance it routes to.
  struct routed_worker {
    std::string router;          ///< the router's name (router[<model>])
    bool kv_capacity_rule = false; ///< router_kv_capacity on, in kv mode
    std::optional<uint64_t> kv_capacity_blocks; ///< learned, over its dp ranks; nullopt: not yet
  };
  /// Every instance of the last publish_capacities() of each router, by id.
  [[nodiscard]] std::map<uint64_t, routed_worker> routed_workers() const;

private:
  router_metrics() = default;

  struct router_state {
    bool rule = false;
    std::vector<uint64_t> workers;
    std::map<worker_key, uint64_t> capacities; ///< as published
  };

  std::shared_ptr<metrics::registry> registry_;
  metrics::counter_family* applied_ = nullptr;
  metrics::gauge_family* entries_ = nullptr;
  metrics::gauge_family* workers_ = nullptr;
  metrics::counter_family* dropped_ = nullptr;
  metrics::gauge_family* capacity_rule_ = nullptr;
  metrics::gauge_family* capacity_ = nullptr;
  mutable std::mutex mutex_; ///< guards routers_
  std::map<std::string, router_state> routers_;
};

} // namespace dynamo::route
