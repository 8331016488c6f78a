#include "apps/dynamo-planner/planner_service.hpp"

#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/kv_event.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

namespace dynamo::apps {

namespace {

int64_t steady_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

} // namespace

expected<std::unique_ptr<planner_service>>
planner_service::start(planes::discovery_plane& discovery, const subscriber_factory& make_subscriber,
                       planner_service_config cfg) {
  auto p = plan::planner::create(cfg.planner, cfg.pools);
  if (!p)
    return p.error();
  if (!cfg.clock)
    cfg.clock = steady_ms;
  std::unique_ptr<planner_service> s(new planner_service(std::move(cfg), std::move(*p)));
  s->published_ = {0, s->planner_.targets()};

  auto* self = s.get();
  planes::event_subscriber_callbacks cb;
  cb.on_event = [self](const planes::event_envelope& env) { self->on_event(env); };
  cb.on_gap = [](const planes::event_gap& gap) {
    spdlog::debug("load metrics from {:016x} lost: expected #{}, got #{}", gap.publisher_id,
                  gap.expected, gap.got);
  };
  s->subscriber_ = make_subscriber(std::move(cb));
  if (auto ok = s->subscriber_->subscribe(std::string{load_metrics_topic}); !ok)
    return ok.error();

  if (!s->cfg_.dry_run) {
    planes::instance_record rec;
    rec.endpoint = {s->cfg_.namespace_name, std::string{plan::decisions_component},
                    std::string{plan::decisions_endpoint}};
    rec.metadata = plan::to_metadata(s->published_);
    auto reg = discovery.register_instance(std::move(rec));
    if (!reg)
      return reg.error();
    s->record_ = std::move(*reg);
    spdlog::info("publishing decisions at {}", s->record_->record().key());
  }

  auto watch = discovery.watch(s->cfg_.namespace_name,
                               [self](const planes::discovery_event& ev) { self->on_discovery(ev); });
  if (!watch)
    return watch.error();
  s->watch_ = std::move(*watch);
  return s;
}

planner_service::planner_service(planner_service_config cfg, plan::planner p)
  : cfg_(std::move(cfg)), planner_(std::move(p)) {}

planner_service::~planner_service() {
  watch_.reset();      // no more discovery callbacks
  subscriber_.reset(); // no more events
  if (record_)
    (void) record_->deregister();
}

void planner_service::on_discovery(const planes::discovery_event& ev) {
  const auto& rec = ev.record;
  if (rec.endpoint.endpoint_name != cfg_.endpoint)
    return;
  const std::string& pool = rec.endpoint.component_name;
  bool known = false;
  for (const auto& p : cfg_.pools)
    known = known || p.name == pool;
  if (!known)
    return;

  std::string connect, disconnect;
  {
    std::lock_guard lk{mutex_};
    auto it = instances_.find(rec.instance);
    std::string old_address = it == instances_.end() ? "" : it->second.event_address;
    bool removed = ev.kind == planes::discovery_event_kind::removed;
    if (removed) {
      if (it == instances_.end())
        return;
      instances_.erase(it);
      planner_.forget_worker(pool, rec.instance);
    } else {
      instances_[rec.instance] = {pool, rec.event_address};
    }
    std::string new_address = removed ? "" : rec.event_address;
    if (old_address != new_address) {
      if (!old_address.empty() && --address_refs_[old_address] == 0) {
        address_refs_.erase(old_address);
        disconnect = old_address;
      }
      if (!new_address.empty() && address_refs_[new_address]++ == 0)
        connect = new_address;
    }
    uint32_t count = 0;
    for (const auto& [id, inst] : instances_)
      count += inst.pool == pool ? 1 : 0;
    planner_.set_instances(pool, count);
  }
  // Outside the lock: the subscriber's I/O thread may be waiting for it in on_event.
  if (!disconnect.empty())
    (void) subscriber_->disconnect(disconnect);
  if (!connect.empty()) {
    if (auto ok = subscriber_->connect(connect); !ok)
      spdlog::warn("cannot subscribe to {}: {}", connect, describe(ok.error()));
    else
      spdlog::info("{}: instance {:016x} ({}) reporting load from {}", pool, rec.instance,
                   to_string(ev.kind), connect);
  }
}

void planner_service::on_event(const planes::event_envelope& env) {
  if (env.topic != load_metrics_topic)
    return;
  auto m = protocol::decode<protocol::load_metrics>(env.payload);
  if (!m)
    return; // counted by the codec's malformed counter
  int64_t now = cfg_.clock();
  std::lock_guard lk{mutex_};
  auto it = instances_.find(m->worker_id);
  if (it == instances_.end())
    return; // not (or no longer) a known instance
  planner_.observe_load(it->second.pool, *m, now);
  ++samples_;
}

void planner_service::update_traffic(int64_t now_ms) {
  if ((!cfg_.planner.throughput_scaling && cfg_.planner.mode != "sla") || !cfg_.fetch_metrics)
    return;
  auto text = cfg_.fetch_metrics();
  if (!text) {
    spdlog::warn("frontend metrics unavailable: {}", describe(text.error()));
    return;
  }
  auto counters = plan::parse_frontend_metrics(*text);
  if (!counters) {
    spdlog::warn("frontend metrics unreadable: {}", describe(counters.error()));
    return;
  }
  if (!last_counters_.empty() && now_ms > last_counters_ms_) {
    double seconds = static_cast<double>(now_ms - last_counters_ms_) / 1000.0;
    std::lock_guard lk{mutex_};
    for (const auto& [model, now_counters] : *counters) {
      auto before = last_counters_.find(model);
      if (before == last_counters_.end())
        continue; // first sight of this model: a rate needs two scrapes
      if (auto t = plan::traffic_between(before->second, now_counters, seconds))
        planner_.observe_traffic(model, *t);
    }
  }
  last_counters_ = std::move(*counters);
  last_counters_ms_ = now_ms;
}

void planner_service::publish() {
  plan::planner_decisions d;
  {
    std::lock_guard lk{mutex_};
    d = published_;
  }
  if (!record_) {
    publish_pending_ = false; // dry run
    return;
  }
  if (auto ok = record_->set_metadata(plan::to_metadata(d)); !ok) {
    spdlog::error("cannot publish decision {}: {} (retrying next interval)", d.decision_id,
                  describe(ok.error()));
    return;
  }
  if (cfg_.apply) {
    if (auto ok = cfg_.apply(d); !ok) {
      spdlog::error("cannot apply decision {}: {} (retrying next interval)", d.decision_id,
                    describe(ok.error()));
      return;
    }
  }
  publish_pending_ = false;
}

plan::step_result planner_service::tick(int64_t now_ms) {
  update_traffic(now_ms);
  plan::step_result r;
  {
    std::lock_guard lk{mutex_};
    r = planner_.step(now_ms);
    if (!r.decisions.empty()) {
      published_ = {r.decision_id, planner_.targets()};
      publish_pending_ = true;
    }
  }
  if (cfg_.metrics)
    cfg_.metrics->observe(r);
  for (const auto& st : r.pools)
    spdlog::debug("{}: target {} observed {} engines {} load {:.3f} (next {:.3f}) waiting {:.2f} "
                  "(next {:.2f}) throughput floor {}: {}",
                  st.pool, st.target, st.observed, st.engines, st.mean_load, st.predicted_load,
                  st.mean_waiting, st.predicted_waiting,
                  st.throughput_floor ? std::to_string(*st.throughput_floor) : "-", st.verdict);
  for (const auto& d : r.decisions) {
    spdlog::info("decision {}: {} {} -> {} replicas (observed {}): {}{}", r.decision_id, d.pool,
                 d.current, d.target, d.observed, d.reason, cfg_.dry_run ? " [dry run]" : "");
    if (cfg_.on_decision)
      cfg_.on_decision(plan::decision_json(d, r.decision_id, now_ms));
  }
  if (publish_pending_)
    publish();
  return r;
}

plan::planner_decisions planner_service::decisions() const {
  std::lock_guard lk{mutex_};
  return published_;
}

std::map<std::string, uint32_t> planner_service::instances() const {
  std::lock_guard lk{mutex_};
  std::map<std::string, uint32_t> out;
  for (const auto& p : cfg_.pools)
    out[p.name] = 0;
  for (const auto& [id, inst] : instances_)
    ++out[inst.pool];
  return out;
}

uint64_t planner_service::samples() const {
  std::lock_guard lk{mutex_};
  return samples_;
}

} // namespace dynamo::apps
