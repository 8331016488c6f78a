// The planner's Prometheus families (dynamo_planner_*): per pool the target
// and observed replicas, the engines that reported, the observed and
// predicted load and queue, the pending decision, the throughput floor and,
// in SLA mode, what one engine sustains; decisions counted by direction.
// Filled from each planner step by dynamo-planner's service; rendered by its
// system server. Thread-safe (the registry's families are).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/metrics/registry.hpp"
#include "runtime/plan/planner.hpp"

#include <memory>

namespace dynamo::plan {

class planner_metrics {
public:
  /// Registers every family in `reg` (which must outlive this object).
  [[nodiscard]] static expected<std::unique_ptr<planner_metrics>> create(metrics::registry& reg);

  /// One planning step: the pools' gauges, the decisions it made.
  void observe(const step_result& r);

private:
  planner_metrics() = default;

  metrics::counter_family* steps_ = nullptr;
  metrics::counter_family* decisions_ = nullptr;
  metrics::gauge_family* target_ = nullptr;
  metrics::gauge_family* observed_ = nullptr;
  metrics::gauge_family* engines_ = nullptr;
  metrics::gauge_family* load_ = nullptr;
  metrics::gauge_family* predicted_load_ = nullptr;
  metrics::gauge_family* waiting_ = nullptr;
  metrics::gauge_family* predicted_waiting_ = nullptr;
  metrics::gauge_family* pending_ = nullptr;
  metrics::gauge_family* throughput_floor_ = nullptr;
  metrics::gauge_family* sla_prefill_seconds_ = nullptr;
  metrics::gauge_family* sla_decode_batch_ = nullptr;
};

} // namespace dynamo::plan
