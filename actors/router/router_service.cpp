#include "actors/router/router_service.hpp"

#include "planes/request/zmq_request_plane.hpp"
#include "runtime/admin/admin_forward.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/components.hpp"
#include "runtime/protocol/disagg.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <mutex>

namespace dynamo::actors {

struct router_service::impl {
  router_service_config cfg;
  planes::discovery_plane* discovery = nullptr;
  std::unique_ptr<planes::request_server> server;
  std::unique_ptr<model_watcher> watcher;
  mutable std::mutex mtx;
  std::map<std::string, std::shared_ptr<routed_client>> clients;
  std::map<std::string, std::unique_ptr<planes::registration>> records;

  void offer(const served_model& m) {
    planes::instance_record rec;
    rec.endpoint = {cfg.namespace_name, std::string{protocol::router_component}, "generate"};
    rec.request_address = server->address();
    rec.metadata = {{std::string{protocol::role_metadata_key}, std::string{protocol::router_component}},
                    {"model", m.card.name}};
    if (!cfg.system_url.empty())
      rec.metadata["system"] = cfg.system_url;
    if (!cfg.admin_url.empty())
      rec.metadata[std::string{admin::admin_url_key}] = cfg.admin_url;
    rec.payload = protocol::encode(m.card);
    auto reg = discovery->register_instance(rec);
    std::lock_guard lk{mtx};
    clients[m.card.name] = m.client;
    if (!reg) {
      spdlog::error("router: cannot offer model {}: {}", m.card.name, describe(reg.error()));
      return;
    }
    records[m.card.name] = std::move(*reg);
    spdlog::info("router: offering model {} at {}", m.card.name, server->address());
  }

  void withdraw(const std::string& model) {
    std::lock_guard lk{mtx};
    clients.erase(model);
    records.erase(model); // deregisters
    spdlog::warn("router: model {} withdrawn (no workers)", model);
  }

  void handle(planes::bytes request, planes::response_stream_ptr stream) {
    auto req = protocol::decode<protocol::preprocessed_request>(request);
    if (!req)
      return stream->fail(req.error());
    std::shared_ptr<routed_client> client;
    {
      std::lock_guard lk{mtx};
      if (auto it = clients.find(req->model); it != clients.end())
        client = it->second;
    }
    if (!client)
      return stream->fail(make_error(errc::not_found, "router: no workers serve model " + req->model));
    auto gen = client->generate(std::move(*req), [stream](expected<protocol::engine_output> c) {
      if (!c)
        return stream->fail(c.error());
      bool last = c->finish != protocol::finish_reason::none;
      (void) stream->send(protocol::encode(*c));
      if (last)
        stream->finish();
    });
    stream->on_cancel([gen] { gen->cancel(); });
  }
};

expected<std::unique_ptr<router_service>>
router_service::start(caf::actor_system& sys, planes::discovery_plane& discovery,
                      router_service_config cfg) {
  std::unique_ptr<router_service> svc(new router_service());
  auto p = std::make_shared<impl>();
  svc->impl_ = p;
  p->cfg = std::move(cfg);
  p->discovery = &discovery;
  planes::zmq_request_server_options so;
  so.bind_address = "tcp://" + p->cfg.plane_host + ":0";
  so.advertise_host = p->cfg.advertise_host;
  so.curve = p->cfg.watcher.curve;
  auto server = planes::make_zmq_request_server(so);
  if (!server)
    return server.error();
  p->server = std::move(*server);
  endpoint_id ep{p->cfg.namespace_name, std::string{protocol::router_component}, "generate"};
  auto* raw = p.get();
  if (auto ok = p->server->serve(ep.path(), [raw](planes::bytes b, planes::response_stream_ptr s) {
        raw->handle(std::move(b), std::move(s));
      });
      !ok)
    return ok.error();
  auto wc = p->cfg.watcher;
  wc.namespace_name = p->cfg.namespace_name;
  wc.components.clear(); // every worker pool, never other routers
  wc.on_model_added = [raw](const served_model& m) { raw->offer(m); };
  wc.on_model_removed = [raw](const std::string& model) { raw->withdraw(model); };
  auto watcher = model_watcher::start(sys, discovery, wc, load_model_assets);
  if (!watcher)
    return watcher.error();
  p->watcher = std::move(*watcher);
  return svc;
}

router_service::~router_service() {
  impl_->watcher.reset();
  std::lock_guard lk{impl_->mtx};
  impl_->records.clear();
}

std::string router_service::address() const { return impl_->server->address(); }

std::vector<std::pair<std::string, caf::actor>> router_service::supervisors() const {
  return impl_->watcher ? impl_->watcher->supervisors() : std::vector<std::pair<std::string, caf::actor>>{};
}

size_t router_service::model_count() const {
  std::lock_guard lk{impl_->mtx};
  return impl_->records.size();
}

} // namespace dynamo::actors
