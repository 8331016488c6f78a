#include "runtime/route/router_metrics.hpp"

namespace dynamo::route {

namespace {

constexpr std::array kinds{protocol::kv_event_kind::stored, protocol::kv_event_kind::removed,
                           protocol::kv_event_kind::cleared};
constexpr std::array statuses{apply_status::ok, apply_status::parent_block_not_found,
                              apply_status::block_not_found, apply_status::invalid_block};

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

} // namespace dynamo::route
