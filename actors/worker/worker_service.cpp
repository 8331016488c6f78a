#include "actors/worker/worker_service.hpp"

#include "actors/core/supervisor.hpp"
#include "actors/worker/kv_handoff.hpp"
#include "actors/worker/worker_endpoint.hpp"
#include "runtime/admin/admin_forward.hpp"
#include "planes/event/zmq_event_plane.hpp"
#include "planes/request/zmq_request_plane.hpp"
#include "runtime/core/ids.hpp"
#include "runtime/protocol/codec.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>

#include <thread>
#include <unistd.h>
#include <spdlog/spdlog.h>

namespace dynamo::actors {

struct worker_service::slot {
  uint64_t id = 0;
  std::string name;
  std::unique_ptr<planes::request_server> server;
  std::shared_ptr<planes::event_publisher> publisher;
  std::shared_ptr<planes::registration> reg;
  std::shared_ptr<worker_handle> handle = std::make_shared<worker_handle>();
  caf::actor sup;
};

namespace {

worker_hooks make_hooks(std::shared_ptr<kv_event_log> events, std::shared_ptr<planes::event_publisher> pub,
                        std::shared_ptr<planes::registration> reg, std::string name, endpoint_metrics em) {
  worker_hooks h;
  h.on_kv_events = [events](std::vector<protocol::kv_event> evs) { events->publish(std::move(evs)); };
  h.on_load = [pub, em](const protocol::load_metrics& m) {
    (void) pub->publish(load_metrics_topic, protocol::encode(m));
    if (em.metrics)
      em.metrics->on_load(em.labels, m);
  };
  if (em.metrics)
    h.on_step = [keep = em.metrics, steps = em.metrics->steps_of(em.labels, em.worker_id)](
                    std::chrono::duration<double> took, uint32_t tokens) { steps(took, tokens); };
  h.on_health = [reg, name](bool healthy, const std::string& why) {
    auto state = healthy ? planes::health_state::ready : planes::health_state::unhealthy;
    if (auto ok = reg->set_health(state); !ok)
      spdlog::error("{}: cannot publish health: {}", name, describe(ok.error()));
    else if (!healthy)
      spdlog::error("{}: marked unhealthy in discovery: {}", name, why);
  };
  return h;
}

expected<std::unique_ptr<worker_service::slot>>
start_slot(caf::actor_system& sys, planes::discovery_plane& discovery,
           const worker_service_config& cfg, uint32_t index, engine_factory factory,
           const std::shared_ptr<planes::request_client>& client) {
  auto s = std::make_unique<worker_service::slot>();
  s->id = new_instance_id();
  planes::zmq_request_server_options ro;
  ro.bind_address = "tcp://" + cfg.plane_host + ":0";
  ro.advertise_host = cfg.advertise_host;
  ro.curve = cfg.curve;
  auto server = planes::make_zmq_request_server(ro);
  if (!server)
    return server.error();
  s->server = std::move(*server);
  planes::zmq_event_publisher_options po;
  po.bind_address = "tcp://" + cfg.plane_host + ":0";
  po.advertise_host = cfg.advertise_host;
  po.publisher_id = s->id;
  po.curve = cfg.curve;
  auto pub = planes::make_zmq_event_publisher(po);
  if (!pub)
    return pub.error();
  s->publisher = std::move(*pub);
  endpoint_id ep{cfg.namespace_name, cfg.component, cfg.endpoint};
  endpoint_metrics em{cfg.metrics, {cfg.namespace_name, cfg.component, cfg.endpoint}, s->id};
  if (auto ok = serve_worker(*s->server, ep.path(), s->handle, em); !ok)
    return ok.error();
  auto events = std::make_shared<kv_event_log>(s->id, s->publisher);
  if (auto ok = kv_event_log::serve(*s->server, protocol::kv_resync_endpoint(ep.path()), events); !ok)
    return ok.error();
  endpoint_id push_ep{cfg.namespace_name, cfg.component, std::string{protocol::kv_push_endpoint}};
  if (cfg.role == protocol::disagg_role::prefill)
    if (auto ok = serve_kv_push(*s->server, push_ep.path(), s->handle); !ok)
      return ok.error();

  planes::instance_record rec;
  rec.endpoint = ep;
  rec.instance = s->id;
  rec.request_address = s->server->address();
  rec.event_address = s->publisher->address();
  rec.metadata = {{std::string{protocol::role_metadata_key}, std::string{protocol::to_string(cfg.role)}},
                  {"model", cfg.card.name},
                  {"index", std::to_string(index)},
                  {std::string{protocol::pid_metadata_key}, std::to_string(::getpid())}};
  if (!cfg.system_url.empty())
    rec.metadata["system"] = cfg.system_url;
  if (!cfg.admin_url.empty())
    rec.metadata[std::string{admin::admin_url_key}] = cfg.admin_url;
  rec.payload = protocol::encode(cfg.card);
  auto reg = discovery.register_instance(rec);
  if (!reg)
    return reg.error();
  s->reg = std::move(*reg);

  auto name = fmt::format("{}-{}", cfg.component, index);
  s->name = name + "-supervisor";
  worker_config wc;
  wc.instance_id = s->id;
  wc.name = name;
  wc.detached = cfg.detached;
  wc.role = cfg.role;
  wc.transfer_address = s->server->address();
  wc.kv_push_endpoint = push_ep.path();
  bool disagg = cfg.role != protocol::disagg_role::aggregated;
  kv_handoff_config hc;
  hc.transport = cfg.kv_transport;
  hc.bind_host = cfg.plane_host;
  hc.advertise_host = cfg.advertise_host;
  auto hooks = make_hooks(events, s->publisher, s->reg, name, em);
  child_spec spec;
  spec.name = name;
  spec.spawn = [wc, factory, hooks, disagg, hc, client, events](caf::actor_system& sys2) {
    // A new incarnation's engine caches nothing (routers drop what they knew),
    // and gets a fresh hand-off: its receiver maps the new engine's KV memory.
    events->publish_cleared();
    auto w = wc;
    if (disagg)
      w.handoff = std::make_shared<kv_handoff>(hc, w.instance_id, client);
    return spawn_worker(sys2, w, factory, hooks);
  };
  spec.on_spawn = [h = s->handle](const caf::actor& a) { h->set(a); };
  supervisor_config sc;
  sc.name = name + "-supervisor";
  s->sup = spawn_supervisor(sys, sc, {spec});
  spdlog::info("{}: instance {:016x} serving {} at {} (events {})", name, s->id, ep.path(),
               rec.request_address, rec.event_address);
  return s;
}

} // namespace

expected<std::unique_ptr<worker_service>>
worker_service::start(caf::actor_system& sys, planes::discovery_plane& discovery,
                      worker_service_config cfg, engine_factory_maker make_factory) {
  std::unique_ptr<worker_service> svc(new worker_service());
  svc->sys_ = &sys;
  std::shared_ptr<planes::request_client> client;
  if (cfg.role != protocol::disagg_role::aggregated)
    client = planes::make_zmq_request_client({{}, cfg.curve});
  for (uint32_t i = 0; i < cfg.num_workers; ++i) {
    auto s = start_slot(sys, discovery, cfg, i, make_factory(i), client);
    if (!s)
      return s.error();
    svc->slots_.push_back(std::move(*s));
  }
  return svc;
}

worker_service::~worker_service() {
  for (auto& s : slots_) {
    (void) s->reg->deregister();
    caf::anon_send_exit(s->sup, caf::exit_reason::user_shutdown);
  }
}

std::vector<uint64_t> worker_service::instance_ids() const {
  std::vector<uint64_t> out;
  for (auto& s : slots_)
    out.push_back(s->id);
  return out;
}

caf::actor worker_service::supervisor(uint32_t index) const {
  return index < slots_.size() ? slots_[index]->sup : caf::actor{};
}

caf::actor worker_service::worker(uint32_t index) const {
  return index < slots_.size() ? slots_[index]->handle->get() : caf::actor{};
}

void worker_service::set_draining(uint32_t index, bool draining) {
  if (index >= slots_.size())
    return;
  auto& s = *slots_[index];
  if (auto a = s.handle->get())
    caf::anon_send(a, drain_atom::value, draining);
  (void) s.reg->set_health(draining ? planes::health_state::draining : planes::health_state::ready);
}

std::vector<std::pair<std::string, caf::actor>> worker_service::supervisors() const {
  std::vector<std::pair<std::string, caf::actor>> out;
  for (auto& s : slots_)
    out.emplace_back(s->name, s->sup);
  return out;
}

std::optional<uint32_t> worker_service::index_of(uint64_t id) const {
  for (uint32_t i = 0; i < slots_.size(); ++i)
    if (slots_[i]->id == id)
      return i;
  return std::nullopt;
}

std::vector<std::pair<uint64_t, planes::health_state>> worker_service::health() const {
  std::vector<std::pair<uint64_t, planes::health_state>> out;
  for (const auto& s : slots_)
    out.emplace_back(s->id, s->reg->record().health);
  return out;
}

uint32_t worker_service::inflight(uint32_t index) const {
  auto a = worker(index);
  if (!a)
    return 0;
  uint32_t n = 0;
  caf::scoped_actor self{*sys_};
  self->request(a, std::chrono::seconds(1), inflight_atom::value)
    .receive([&](uint32_t v) { n = v; }, [](caf::error&) {});
  return n;
}

uint32_t worker_service::shutdown(std::chrono::milliseconds grace) {
  for (uint32_t i = 0; i < size(); ++i)
    set_draining(i, true);
  auto deadline = std::chrono::steady_clock::now() + grace;
  uint32_t left = 0;
  do {
    left = 0;
    for (uint32_t i = 0; i < size(); ++i)
      left += inflight(i);
    if (left == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  for (auto& s : slots_)
    (void) s->reg->deregister();
  if (left > 0)
    spdlog::warn("shutdown: {} request(s) still running after {} ms; they are cut", left, grace.count());
  return left;
}

uint32_t worker_service::size() const noexcept {
  return static_cast<uint32_t>(slots_.size());
}

} // namespace dynamo::actors
