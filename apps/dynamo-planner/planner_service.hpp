// dynamo-planner's wiring around plan::planner: watches <ns>/<pool>/generate
// instances on the discovery plane, subscribes to each one's "kv_metrics" on
// the event plane (connecting as instances appear, disconnecting as they go),
// optionally scrapes the frontend's traffic, and on each tick() decides and
// publishes the targets as the <ns>/planner/decisions record (metadata
// replicas.<pool>, decision_id) that the launcher applies, and hands them to
// an optional connector (Kubernetes: kubernetes_connector).
// Thread-safe: discovery and event callbacks run on their planes' threads;
// tick() on one caller thread (main's ticker, or a test).
#pragma once

#include "planes/discovery/discovery_plane.hpp"
#include "planes/event/event_plane.hpp"
#include "runtime/config/cluster_config.hpp"
#include "runtime/plan/decisions.hpp"
#include "runtime/plan/planner.hpp"
#include "runtime/plan/planner_metrics.hpp"
#include "runtime/protocol/kv_event.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace dynamo::apps {

/// Workers publish their load on this topic.
using protocol::load_metrics_topic;

/// Makes the event subscriber (ZeroMQ in the binary, the in-process fake in tests).
using subscriber_factory =
    std::function<std::unique_ptr<planes::event_subscriber>(planes::event_subscriber_callbacks)>;

struct planner_service_config {
  std::string namespace_name = "dynamo";
  std::string endpoint = "generate";     ///< the workers' endpoint
  config::planner_config planner;
  std::vector<plan::pool_spec> pools;
  bool dry_run = false;                  ///< decide and report, publish no record
  /// Milliseconds stamped on load samples as they arrive (the planner's clock).
  std::function<int64_t()> clock;
  /// The frontend's /metrics text (throughput_scaling); empty: no traffic source.
  std::function<expected<std::string>()> fetch_metrics;
  /// Called with one JSON line per decision (plan::decision_json).
  std::function<void(const std::string&)> on_decision;
  /// Fed every step's result (dynamo_planner_*); null: none.
  std::shared_ptr<plan::planner_metrics> metrics;
  /// Applies published targets (the Kubernetes connector), after the record
  /// is written; an error keeps the decision pending, retried next tick.
  /// Null: the record alone (dynamo-launch applies it). Not called in a dry run.
  std::function<expected<void>(const plan::planner_decisions&)> apply;
};

class planner_service {
public:
  /// errc::config_error from the planner's checks; the discovery plane's error
  /// when the watch or the decisions record cannot be set up.
  [[nodiscard]] static expected<std::unique_ptr<planner_service>>
  start(planes::discovery_plane& discovery, const subscriber_factory& make_subscriber,
        planner_service_config cfg);
  ~planner_service();
  planner_service(const planner_service&) = delete;
  planner_service& operator=(const planner_service&) = delete;

  /// One planning step at `now_ms` (the same clock as cfg.clock): scrape
  /// traffic if configured, decide, publish and report changes.
  [[nodiscard]] plan::step_result tick(int64_t now_ms);

  /// The targets as last published (or decided, in a dry run).
  [[nodiscard]] plan::planner_decisions decisions() const;
  /// Live instances seen per pool.
  [[nodiscard]] std::map<std::string, uint32_t> instances() const;
  /// load_metrics accepted so far (from known instances).
  [[nodiscard]] uint64_t samples() const;

private:
  struct instance {
    std::string pool;
    std::string event_address;
  };

  planner_service(planner_service_config cfg, plan::planner p);
  void on_discovery(const planes::discovery_event& ev);
  void on_event(const planes::event_envelope& env);
  void update_traffic(int64_t now_ms);
  void publish();

  planner_service_config cfg_;
  mutable std::mutex mutex_;
  plan::planner planner_;                     // guarded by mutex_
  std::map<uint64_t, instance> instances_;    // guarded
  std::map<std::string, uint32_t> address_refs_; // guarded
  uint64_t samples_ = 0;                      // guarded
  plan::planner_decisions published_;         // guarded
  bool publish_pending_ = false;              // tick thread only
  std::map<std::string, plan::traffic_counters> last_counters_; // tick thread only
  int64_t last_counters_ms_ = 0;              // tick thread only
  std::unique_ptr<planes::event_subscriber> subscriber_;
  std::unique_ptr<planes::registration> record_;
  std::unique_ptr<planes::discovery_watch> watch_;
};

} // namespace dynamo::apps
