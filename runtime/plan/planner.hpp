// The planner's decision loop (research/dynamo.md 6.1, 6.4), pure: per pool,
// the load_metrics of its workers over the last interval, a predictor over the
// pool's mean load and queue, thresholds by role (KV usage for decode and
// aggregated pools, active prefill tokens for prefill pools, the waiting queue
// for all), +-1 replica per decision, one pending action per pool, min/max
// replicas, a throughput lower bound and the GPU budget across pools.
// Fed and stepped by apps/dynamo-planner (and tests) with an injected clock
// (milliseconds). Not thread-safe: one owner, or the owner's lock.
#pragma once

#include "runtime/config/cluster_config.hpp"
#include "runtime/core/error.hpp"
#include "runtime/plan/predictor.hpp"
#include "runtime/plan/profile.hpp"
#include "runtime/plan/throughput.hpp"
#include "runtime/protocol/kv_event.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dynamo::plan {

/// One pool as the planner sees it.
struct pool_spec {
  std::string name;
  config::worker_role role = config::worker_role::aggregated;
  std::string model;
  uint32_t replicas = 1;                   ///< deployed at start (the config's replicas)
  uint32_t workers_per_replica = 1;        ///< discovery instances per replica
  uint32_t gpus_per_replica = 1;           ///< its cost in the GPU budget
  uint32_t prefill_capacity_tokens = 8192; ///< prefill load = active_prefill_tokens / this
  replica_capacity capacity;               ///< throughput model, per replica
  /// SLA mode: the engine's profile (dynamo-profile); capacity then comes from
  /// it and the targets, per predicted ISL/OSL, x workers_per_replica.
  std::optional<engine_profile> profile;
};

/// The pools of `c` in config order (capacities from planner.*_tokens_per_s
/// x workers_per_process, cost workers_per_process x planner.gpus_per_worker).
[[nodiscard]] std::vector<pool_spec> pool_specs(const config::cluster_config& c);

/// The predictor the planner config names.
[[nodiscard]] expected<predictor_config> predictor_config_of(const config::planner_config& c);

/// A change of one pool's target replicas.
struct scaling_decision {
  std::string pool;
  config::worker_role role = config::worker_role::aggregated;
  uint32_t current = 0;  ///< the target before this decision
  uint32_t target = 0;
  uint32_t observed = 0; ///< replicas seen in discovery when deciding
  std::string reason;
};

/// How one pool was judged in one step (logs, tests).
struct pool_status {
  std::string pool;
  uint32_t target = 0;   ///< after this step
  uint32_t observed = 0;
  bool pending = false;  ///< after this step
  size_t engines = 0;    ///< engines that reported in the window
  size_t workers = 0;    ///< distinct workers among them (scale-down needs all observed instances)
  double mean_load = 0, mean_waiting = 0;           ///< this window, pool means
  double predicted_load = 0, predicted_waiting = 0; ///< next interval
  std::optional<uint32_t> throughput_floor; ///< load mode: a lower bound; sla mode: the target
  std::optional<sla_estimate> sla;          ///< sla mode: what one engine sustains now
  std::string verdict;
};

struct step_result {
  uint64_t decision_id = 0; ///< the planner's decision id after this step
  std::vector<scaling_decision> decisions; ///< empty when nothing changed
  std::vector<pool_status> pools;          ///< config order
};

class planner {
public:
  /// errc::config_error for an unknown predictor, min > max, duplicate pool
  /// names, or a GPU budget below the minimum footprint.
  [[nodiscard]] static expected<planner> create(config::planner_config cfg,
                                                std::vector<pool_spec> pools);

  /// One load report of an engine of `pool` received at `at_ms`. Unknown pools
  /// are ignored. Engines are told apart by (worker_id, dp_rank).
  void observe_load(std::string_view pool, const protocol::load_metrics& m, int64_t at_ms);
  /// Drops a vanished worker's samples.
  void forget_worker(std::string_view pool, uint64_t worker_id);
  /// Live discovery instances of `pool` (replicas = ceil(instances / workers_per_replica)).
  void set_instances(std::string_view pool, uint32_t instances);
  /// The traffic of `model` over the last interval (throughput_scaling).
  void observe_traffic(std::string_view model, const traffic& t);

  /// Judges every pool with the samples of (now_ms - interval_ms, now_ms].
  [[nodiscard]] step_result step(int64_t now_ms);

  /// Target replicas per pool. Until this planner's first decision for a
  /// pool, its target follows max(the config's replicas, the observed
  /// replicas): a restarted planner starts from what runs, and never shrinks a
  /// pool merely because it restarted (or because workers are still starting).
  [[nodiscard]] std::map<std::string, uint32_t> targets() const;
  /// Increments with each step that changed a target; 0 before any.
  [[nodiscard]] uint64_t decision_id() const noexcept { return decision_id_; }
  [[nodiscard]] const std::vector<pool_spec>& pools() const noexcept { return specs_; }

private:
  struct sample {
    int64_t at_ms = 0;
    double load = 0;
    double waiting = 0;
  };
  using engine_key = std::pair<uint64_t, uint32_t>; ///< (worker_id, dp_rank)
  struct pool_state {
    uint32_t target = 0;
    uint32_t instances = 0;
    bool pending = false;
    int64_t pending_since_ms = 0;
    bool decided = false; ///< this planner has changed the target at least once
    std::map<engine_key, std::deque<sample>> samples;
    predictor load;
    predictor waiting;
    /// (step time, proposal) within scale_down_stabilization_ms, oldest first.
    std::deque<std::pair<int64_t, uint32_t>> proposals;
  };
  struct traffic_state {
    predictor rate, isl, osl, hit;
  };
  struct window {
    size_t engines = 0;
    size_t workers = 0;    ///< distinct worker ids among the engines
    double mean_load = 0, mean_waiting = 0;
    bool all_below = true; ///< every engine under both down thresholds
  };

  planner(config::planner_config cfg, std::vector<pool_spec> pools, predictor_config pc);
  [[nodiscard]] int index_of(std::string_view pool) const;
  [[nodiscard]] uint32_t observed_replicas(size_t i) const;
  [[nodiscard]] window summarize(size_t i, int64_t now_ms);
  [[nodiscard]] std::optional<uint32_t> throughput_floor(size_t i, pool_status& st) const;
  [[nodiscard]] uint32_t propose(size_t i, const window& w, pool_status& st) const;
  /// `proposed` after scale-down stabilization (planner_config::scale_down_stabilization_ms);
  /// records it among the pool's recent proposals.
  [[nodiscard]] uint32_t stabilize(size_t i, uint32_t proposed, int64_t now_ms, pool_status& st);

  config::planner_config cfg_;
  predictor_config predictor_cfg_;
  std::vector<pool_spec> specs_;
  std::vector<pool_state> state_;
  std::map<std::string, traffic_state, std::less<>> traffic_;
  std::vector<size_t> priority_; ///< budget order: prefill, aggregated, decode pools
  uint64_t decision_id_ = 0;
};

} // namespace dynamo::plan
