#include "runtime/route/router_metrics.hpp"

#include <fmt/format.h>

namespace dynamo::route {

namespace {

constexpr std::array kinds{protocol::kv_event_kind::stored, protocol::kv_event_kind::removed,
                           protocol::kv_event_kind::cleared};
constexpr std::array statuses{apply_status::ok, apply_status::parent_block_not_found,
                              apply_status::block_not_found, apply_status::invalid_block};

// worker_id as the workers' own dynamo_component_kvstats_* series spell it.
metrics::label_values capacity_labels(const std::string& router, const worker_key& w) {
  return {router, fmt::format("{:016x}", w.worker_id), std::to_string(w.dp_rank)};
}

} // namespace

expected<std::shared_ptr<router_metrics>>
router_metrics::create(std::shared_ptr<metrics::registry> reg, const std::string& prefix) {
  if (!reg)
    return make_error(errc::invalid_argument, "router metrics need a registry");
  std::shared_ptr<router_metrics> m{new router_metrics()};
  const std::vector<std::string> router{"router"};
  if (auto e = metrics::take(
          reg->add_counter(prefix + "_kv_events_applied_total",
                           "KV events applied to the router's index, by type and status",
                           {"router", "event_type", "status"}),
          m->applied_))
    return e;
  if (auto e = metrics::take(
          reg->add_gauge(prefix + "_kv_index_entries",
                         "(worker, block) entries in the router's KV index", router),
          m->entries_))
    return e;
  if (auto e = metrics::take(
          reg->add_gauge(prefix + "_kv_index_workers",
                         "Workers (with dp rank) holding blocks in the router's KV index", router),
          m->workers_))
    return e;
  if (auto e = metrics::take(
          reg->add_counter(prefix + "_kv_events_dropped_total",
                           "KV events dropped before reaching the router (full inbox)", router),
          m->dropped_))
    return e;
  if (auto e = metrics::take(
          reg->add_gauge(prefix + "_kv_capacity_rule",
                         "1 when the router avoids workers a request would overflow (router_kv_capacity in kv mode), else 0",
                         router),
          m->capacity_rule_))
    return e;
  if (auto e = metrics::take(
          reg->add_gauge(prefix + "_worker_kv_capacity_blocks",
                         "KV blocks the router has learned a worker holds (its load reports' total_blocks)",
                         {"router", "worker_id", "dp_rank"}),
          m->capacity_))
    return e;
  m->registry_ = std::move(reg);
  return m;
}

void router_metrics::publish(const std::string& name, const kv_indexer& index, uint64_t dropped,
                             cursor& last) {
  for (size_t k = 0; k < kinds.size(); ++k)
    for (size_t s = 0; s < statuses.size(); ++s) {
      uint64_t now = index.applied(kinds[k], statuses[s]);
      uint64_t& before = last.applied[k][s];
      if (now > before) {
        applied_
            ->with({name, std::string{protocol::to_string(kinds[k])},
                    std::string{to_string(statuses[s])}})
            .inc(static_cast<double>(now - before));
        before = now;
      }
    }
  entries_->with({name}).set(static_cast<double>(index.entry_count()));
  workers_->with({name}).set(static_cast<double>(index.workers().size()));
  if (dropped > last.dropped) {
    dropped_->with({name}).inc(static_cast<double>(dropped - last.dropped));
    last.dropped = dropped;
  }
}

void router_metrics::publish_capacities(const std::string& name, const kv_router& router,
                                        std::vector<uint64_t> workers) {
  std::map<worker_key, uint64_t> now(router.worker_capacities().begin(), router.worker_capacities().end());
  std::lock_guard lk{mutex_};
  router_state& st = routers_[name];
  // The rule decides only among kv-mode candidates (kv_router::choose).
  st.rule = router.config().router_kv_capacity && router.mode() == router_mode::kv;
  capacity_rule_->with({name}).set(st.rule ? 1.0 : 0.0);
  for (const auto& [w, blocks] : st.capacities)
    if (!now.count(w))
      capacity_->remove(capacity_labels(name, w));
  for (const auto& [w, blocks] : now)
    capacity_->with(capacity_labels(name, w)).set(static_cast<double>(blocks));
  st.capacities = std::move(now);
  st.workers = std::move(workers);
}

std::map<uint64_t, router_metrics::routed_worker> router_metrics::routed_workers() const {
  std::map<uint64_t, routed_worker> out;
  std::lock_guard lk{mutex_};
  for (const auto& [name, st] : routers_) {
    for (uint64_t id : st.workers)
      out[id] = routed_worker{name, st.rule, std::nullopt};
    for (const auto& [w, blocks] : st.capacities)
      if (auto it = out.find(w.worker_id); it != out.end() && it->second.router == name)
        it->second.kv_capacity_blocks = it->second.kv_capacity_blocks.value_or(0) + blocks;
  }
  return out;
}

} // namespace dynamo::route
