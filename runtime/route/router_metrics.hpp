// The routers' KV indexes on /metrics: events applied by type and status (Dynamo's
// kv_cache_events_applied{status}), (worker, block) entries and workers indexed,
// and KV events dropped before they reached a router. Created once per process on
// the frontend's registry (which it keeps alive); each router actor publishes into
// it about once a second. Thread rules: those of metrics::registry.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/metrics/registry.hpp"
#include "runtime/route/kv_indexer.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace dynamo::route {

class router_metrics {
public:
  /// Registers the families `<prefix>_kv_events_applied_total{router,event_type,status}`,
  /// `<prefix>_kv_index_entries{router}`, `<prefix>_kv_index_workers{router}` and
  /// `<prefix>_kv_events_dropped_total{router}` in `reg`.
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

private:
  router_metrics() = default;

  std::shared_ptr<metrics::registry> registry_;
  metrics::counter_family* applied_ = nullptr;
  metrics::gauge_family* entries_ = nullptr;
  metrics::gauge_family* workers_ = nullptr;
  metrics::counter_family* dropped_ = nullptr;
};

} // namespace dynamo::route
