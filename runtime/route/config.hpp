// Router configuration with Dynamo's defaults and flag names (research/dynamo.md
// 3.9; KvRouterConfig::default), the router mode, and per-request overrides.
// Filled by apps from flags / cluster config, read by kv_router. Plain values.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::route {

/// --router-mode: "kv" | "round-robin" | "random".
enum class router_mode : uint8_t { round_robin, random, kv };

[[nodiscard]] expected<router_mode> parse_router_mode(std::string_view text);
[[nodiscard]] std::string_view to_string(router_mode mode) noexcept;

/// --router-queue-policy: the order parked requests would leave the router's
/// queue (Dynamo's flag; accepted and checked, not yet read by the router).
enum class queue_policy : uint8_t { fcfs, lcfs, wspt };

/// --router-cost: how kv_overlap_score_weight is set. dynamo: as given
/// (Dynamo's default 1). timing: priced in time from an engine profile.
enum class cost_model : uint8_t { dynamo, timing };

/// The flag's spelling ("fcfs", "timing"); errc::config_error naming the flag
/// and listing the allowed values for anything else.
[[nodiscard]] expected<queue_policy> parse_queue_policy(std::string_view text);
[[nodiscard]] std::string_view to_string(queue_policy p) noexcept;
[[nodiscard]] expected<cost_model> parse_cost_model(std::string_view text);
[[nodiscard]] std::string_view to_string(cost_model m) noexcept;

struct kv_router_config {
  double overlap_score_weight = 1.0;    ///< --kv-overlap-score-weight
  double router_temperature = 0.0;      ///< --router-temperature
  bool use_kv_events = true;            ///< --use-kv-events / --no-kv-events
  bool router_replica_sync = false;     ///< --router-replica-sync
  bool router_track_active_blocks = true;  ///< --router-track-active-blocks
  bool router_track_output_blocks = false; ///< --router-track-output-blocks (not modelled yet)
  bool router_assume_kv_reuse = true;   ///< --router-assume-kv-reuse
  bool router_track_prefill_tokens = true; ///< --router-track-prefill-tokens
  bool router_durable_kv_events = false;   ///< --router-durable-kv-events (not supported)
  uint64_t router_snapshot_threshold = 1'000'000; ///< --router-snapshot-threshold
  bool router_reset_states = false;     ///< --router-reset-states
  double router_ttl_secs = 120.0;       ///< --router-ttl (approximate mode)
  uint64_t router_max_tree_size = uint64_t{1} << 20; ///< --router-max-tree-size
  double router_prune_target_ratio = 0.8;   ///< --router-prune-target-ratio
  double router_queue_threshold = 4.0;  ///< --router-queue-threshold
  uint32_t router_event_threads = 4;    ///< --router-event-threads
  queue_policy router_queue_policy = queue_policy::fcfs; ///< --router-queue-policy: fcfs | lcfs | wspt
  /// --router-lower-tier-weight: a block a worker holds only in its KV block
  /// manager's host or disk tier (KV events with medium CPU / DISK) counts as
  /// this fraction of a device hit in the prefill cost (onboarding is cheaper
  /// than recomputing, dearer than a device hit). 0 ignores those tiers.
  double router_lower_tier_weight = 0.5;
  /// --router-kv-capacity: learn each worker's KV capacity from its load
  /// metrics (load_metrics::total_blocks) and choose a worker whose booked
  /// blocks plus the request's would exceed it only when every candidate would
  /// (kv_router::set_worker_capacity, fed by the router actor from the
  /// workers' load reports). Off: Dynamo's cost alone.
  bool router_kv_capacity = false;
  /// --router-cost: with timing, kv_overlap_score_weight is priced from the
  /// engine profile at router_profile (prefill time of a block / what a
  /// resident block adds to a decode step), set by plan::apply_router_cost
  /// before the router is built.
  cost_model router_cost = cost_model::dynamo;
  std::string router_profile; ///< --router-profile: dynamo-profile JSON (router_cost timing)

  /// Checks ranges and combinations; errc::config_error names the field.
  [[nodiscard]] expected<void> validate() const;
  /// The flags of Dynamo's router this one accepts (so a Dynamo command line
  /// or config runs) but does not act on yet, each given here a value other
  /// than its default: the routing binaries warn about them at startup.
  /// Empty with the defaults.
  [[nodiscard]] std::vector<std::string> inert_settings() const;

  /// Sets one field from its flag: set("--router-temperature", "0.5"). Boolean
  /// flags take "true"/"false"/"1"/"0" or an empty value (= true);
  /// "--no-kv-events" and "--no-<flag>" forms clear them.
  [[nodiscard]] expected<void> set(std::string_view flag, std::string_view value);
};

struct kv_router_flag {
  std::string_view name;
  std::string_view help;
};

/// Every flag kv_router_config::set accepts, for --help texts.
[[nodiscard]] std::span<const kv_router_flag> kv_router_flags() noexcept;

/// Per-request overrides (nvext router_config_override / agent hints).
struct router_config_override {
  std::optional<double> overlap_score_weight;
  std::optional<double> router_temperature;
  std::optional<bool> assume_kv_reuse;
  std::optional<bool> track_prefill_tokens;
};

} // namespace dynamo::route
