#include "runtime/route/config.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

namespace dynamo::route {

namespace {

constexpr std::array<kv_router_flag, 21> flags{{
    {"--kv-overlap-score-weight", "weight of prefill blocks against decode blocks (1.0)"},
    {"--router-temperature", "softmax temperature over worker costs; 0 = argmin (0.0)"},
    {"--use-kv-events", "index KV events from workers; --no-kv-events = approximate (true)"},
    {"--router-replica-sync", "share active-sequence bookings between routers (false; accepted, no effect yet)"},
    {"--router-track-active-blocks", "count active decode blocks per worker (true)"},
    {"--router-track-output-blocks", "add output blocks as they grow (false; accepted, no effect yet)"},
    {"--router-assume-kv-reuse", "dedup blocks shared by active requests (true)"},
    {"--router-track-prefill-tokens", "count pending prefill tokens per worker (true)"},
    {"--router-durable-kv-events", "durable event stream (false; unsupported)"},
    {"--router-snapshot-threshold", "events between index snapshots (1000000; accepted, no effect yet)"},
    {"--router-reset-states", "drop persisted router state at start (false; accepted, no effect yet)"},
    {"--router-ttl", "approximate-mode block lifetime in seconds (120; accepted, no effect yet)"},
    {"--router-max-tree-size", "bound on indexed (worker, block) entries (1048576)"},
    {"--router-prune-target-ratio", "prune down to this fraction of the bound (0.8)"},
    {"--router-queue-threshold", "park requests when all workers exceed it (4.0; accepted, no effect yet: no admission queue)"},
    {"--router-event-threads", "threads applying KV events, workers sharded across them; 1 = on the router (4)"},
    {"--router-queue-policy", "fcfs | lcfs | wspt (fcfs; accepted, no effect yet: no admission queue)"},
    {"--router-lower-tier-weight", "a block in a worker's KVBM host/disk tier counts as this fraction of a device hit (0.5)"},
    {"--router-kv-capacity", "learn workers' KV capacity from their load metrics; avoid one a request would overflow (false)"},
    {"--router-cost", "dynamo | timing: overlap weight as given, or priced in time from --router-profile (dynamo)"},
    {"--router-profile", "dynamo-profile JSON that --router-cost timing derives the overlap weight from"},
}};

caf::error config_error(std::string_view flag, std::string_view why) {
  return make_error(errc::config_error, fmt::format("{}: {}", flag, why));
}

expected<double> parse_double(std::string_view flag, std::string_view v) {
  double out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || p != v.data() + v.size() || !std::isfinite(out))
    return config_error(flag, fmt::format("'{}' is not a finite number", v));
  return out;
}

expected<uint64_t> parse_u64(std::string_view flag, std::string_view v) {
  uint64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || p != v.data() + v.size())
    return config_error(flag, fmt::format("'{}' is not an unsigned integer", v));
  return out;
}

expected<bool> parse_bool(std::string_view flag, std::string_view v) {
  if (v.empty() || v == "true" || v == "1")
    return true;
  if (v == "false" || v == "0")
    return false;
  return config_error(flag, fmt::format("'{}' is not true/false", v));
}

// Assigns `parsed` (an expected) to `field`, or returns its error.
template <class T, class U>
expected<void> assign(T& field, expected<U> parsed) {
  if (!parsed)
    return std::move(parsed.error());
  field = static_cast<T>(*parsed);
  return {};
}

// One enum's flag spellings, in enum order: the one place that parses,
// names and lists them ("must be fcfs, lcfs or wspt").
template <class E, size_t N>
struct spellings {
  std::string_view flag;
  std::array<std::string_view, N> names;

  [[nodiscard]] expected<E> parse(std::string_view text) const {
    for (size_t i = 0; i < N; ++i)
      if (names[i] == text)
        return static_cast<E>(i);
    std::string allowed{names[0]};
    for (size_t i = 1; i < N; ++i)
      allowed += fmt::format("{}{}", i + 1 == N ? " or " : ", ", names[i]);
    return config_error(flag, fmt::format("'{}': must be {}", text, allowed));
  }
  [[nodiscard]] std::string_view name(E e) const noexcept {
    auto i = static_cast<size_t>(e);
    return i < N ? names[i] : std::string_view{"unknown"};
  }
};

constexpr spellings<queue_policy, 3> queue_policies{"--router-queue-policy", {"fcfs", "lcfs", "wspt"}};
constexpr spellings<cost_model, 2> cost_models{"--router-cost", {"dynamo", "timing"}};

} // namespace

expected<queue_policy> parse_queue_policy(std::string_view text) { return queue_policies.parse(text); }
std::string_view to_string(queue_policy p) noexcept { return queue_policies.name(p); }
expected<cost_model> parse_cost_model(std::string_view text) { return cost_models.parse(text); }
std::string_view to_string(cost_model m) noexcept { return cost_models.name(m); }

expected<router_mode> parse_router_mode(std::string_view text) {
  if (text == "kv")
    return router_mode::kv;
  if (text == "round-robin")
    return router_mode::round_robin;
  if (text == "random")
    return router_mode::random;
  return make_error(errc::config_error,
                    fmt::format("--router-mode: '{}' is not kv, round-robin or random", text));
}

std::string_view to_string(router_mode mode) noexcept {
  switch (mode) {
  case router_mode::kv:
    return "kv";
  case router_mode::round_robin:
    return "round-robin";
  case router_mode::random:
    return "random";
  }
  return "unknown";
}

std::span<const kv_router_flag> kv_router_flags() noexcept { return flags; }

expected<void> kv_router_config::validate() const {
  if (!std::isfinite(overlap_score_weight) || overlap_score_weight < 0)
    return config_error("--kv-overlap-score-weight", "must be finite and >= 0");
  if (!std::isfinite(router_temperature) || router_temperature < 0)
    return config_error("--router-temperature", "must be finite and >= 0");
  if (router_track_output_blocks && !router_track_active_blocks)
    return config_error("--router-track-output-blocks", "requires --router-track-active-blocks");
  if (!(router_prune_target_ratio > 0 && router_prune_target_ratio <= 1))
    return config_error("--router-prune-target-ratio", "must be in (0, 1]");
  if (!(router_ttl_secs > 0))
    return config_error("--router-ttl", "must be > 0");
  if (router_event_threads == 0)
    return config_error("--router-event-threads", "must be >= 1");
  if (!(router_lower_tier_weight >= 0 && router_lower_tier_weight <= 1))
    return config_error("--router-lower-tier-weight", "must be in [0, 1]");
  if (router_durable_kv_events)
    return config_error("--router-durable-kv-events", "durable KV events are not supported");
  if (router_cost == cost_model::timing && router_profile.empty())
    return config_error("--router-cost", "timing needs --router-profile (a dynamo-profile JSON)");
  if (router_cost != cost_model::timing && !router_profile.empty())
    return config_error("--router-profile", "is read only with --router-cost timing");
  if (router_kv_capacity && !router_track_active_blocks)
    return config_error("--router-kv-capacity", "requires --router-track-active-blocks (the booked blocks it compares)");
  return {};
}

std::vector<std::string> kv_router_config::inert_settings() const {
  const kv_router_config d;
  std::vector<std::string> out;
  auto note = [&](bool differs, const char* flag) {
    if (differs)
      out.emplace_back(flag);
  };
  note(router_replica_sync != d.router_replica_sync, "--router-replica-sync");
  note(router_track_output_blocks != d.router_track_output_blocks, "--router-track-output-blocks");
  note(router_snapshot_threshold != d.router_snapshot_threshold, "--router-snapshot-threshold");
  note(router_reset_states != d.router_reset_states, "--router-reset-states");
  note(router_ttl_secs != d.router_ttl_secs, "--router-ttl");
  note(router_queue_threshold != d.router_queue_threshold, "--router-queue-threshold");
  note(router_queue_policy != d.router_queue_policy, "--router-queue-policy");
  return out;
}

expected<void> kv_router_config::set(std::string_view flag, std::string_view v) {
  if (flag == "--no-kv-events") {
    use_kv_events = false;
    return {};
  }
  bool negated = flag.starts_with("--no-");
  std::string name = negated ? fmt::format("--{}", flag.substr(5)) : std::string{flag};
  auto boolean = [&](bool& field) -> expected<void> {
    if (negated) {
      field = false;
      return {};
    }
    return assign(field, parse_bool(flag, v));
  };
  if (name == "--use-kv-events")
    return boolean(use_kv_events);
  if (name == "--router-replica-sync")
    return boolean(router_replica_sync);
  if (name == "--router-track-active-blocks")
    return boolean(router_track_active_blocks);
  if (name == "--router-track-output-blocks")
    return boolean(router_track_output_blocks);
  if (name == "--router-assume-kv-reuse")
    return boolean(router_assume_kv_reuse);
  if (name == "--router-track-prefill-tokens")
    return boolean(router_track_prefill_tokens);
  if (name == "--router-durable-kv-events")
    return boolean(router_durable_kv_events);
  if (name == "--router-reset-states")
    return boolean(router_reset_states);
  if (name == "--router-kv-capacity")
    return boolean(router_kv_capacity);
  if (negated)
    return config_error(flag, "not a boolean flag");
  if (name == "--kv-overlap-score-weight")
    return assign(overlap_score_weight, parse_double(flag, v));
  if (name == "--router-temperature")
    return assign(router_temperature, parse_double(flag, v));
  if (name == "--router-ttl")
    return assign(router_ttl_secs, parse_double(flag, v));
  if (name == "--router-prune-target-ratio")
    return assign(router_prune_target_ratio, parse_double(flag, v));
  if (name == "--router-queue-threshold")
    return assign(router_queue_threshold, parse_double(flag, v));
  if (name == "--router-lower-tier-weight")
    return assign(router_lower_tier_weight, parse_double(flag, v));
  if (name == "--router-snapshot-threshold")
    return assign(router_snapshot_threshold, parse_u64(flag, v));
  if (name == "--router-max-tree-size")
    return assign(router_max_tree_size, parse_u64(flag, v));
  if (name == "--router-event-threads") {
    auto n = parse_u64(flag, v);
    if (n && *n > UINT32_MAX)
      return config_error(flag, "too large");
    return assign(router_event_threads, std::move(n));
  }
  // Parsed here, so they refuse "": a flag that accepts "" is taken for a
  // switch by the command line (--router-queue-policy lcfs once failed).
  if (name == "--router-queue-policy")
    return assign(router_queue_policy, parse_queue_policy(v));
  if (name == "--router-cost")
    return assign(router_cost, parse_cost_model(v));
  if (name == "--router-profile") {
    if (v.empty())
      return config_error(flag, "needs a path");
    router_profile = std::string{v};
    return {};
  }
  return config_error(flag, "unknown router flag");
}

} // namespace dynamo::route
