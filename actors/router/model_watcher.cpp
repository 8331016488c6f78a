#include "actors/router/model_watcher.hpp"

#include "actors/router/vllm_kv_relay.hpp"
#include "planes/event/zmq_event_plane.hpp"
#include "planes/request/zmq_request_plane.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/components.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "runtime/tokenizer/jinja_chat_template.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace dynamo::actors {

model_assets mocker_assets() {
  return {std::make_shared<tok::byte_tokenizer>(), std::make_shared<tok::simple_chat_template>()};
}

expected<model_assets> load_model_assets(const protocol::model_card& card) {
  if (card.source == "mocker")
    return mocker_assets();
  auto file = gguf::file::open(card.source);
  if (!file)
    return file.error();
  auto tk = tok::load_tokenizer(**file);
  if (!tk)
    return tk.error();
  auto tmpl = tok::load_chat_template(**file);
  if (tmpl.fallback)
    spdlog::warn("model {}: using the built-in ChatML template ({})", card.name, tmpl.reason);
  return model_assets{*tk, tmpl.tmpl};
}

struct model_watcher::impl {
  caf::actor_system* sys = nullptr;
  model_watcher_config cfg;
  model_assets_loader loader;
  mutable std::mutex mtx;
  std::map<std::string, served_model> models;
  std::map<std::string, std::set<uint64_t>> instances_by_model;
  /// What the watcher knows of one instance it routes to.
  struct instance_entry {
    std::string model;
    std::string event_address;
    std::shared_ptr<actor_handle> router; ///< the router it was given to (its KV events go there)
    kv_event_inbox_ptr kv_inbox;          ///< that router's inbox for KV events
    worker_info info;                     ///< what that router was told
    bool prefill = false;                 ///< counted in its model's prefill pool
    std::shared_ptr<vllm_kv_relay> relay; ///< its engine's vLLM-format KV events, when it has them
    std::shared_ptr<actor_handle> relay_router; ///< the router that relay feeds
  };
  std::map<uint64_t, instance_entry> instances;
  std::map<std::shared_ptr<actor_handle>, kv_event_inbox_ptr> kv_inboxes; ///< one per router
  std::weak_ptr<impl> weak_self;
  std::set<std::string> unlisted; ///< models whose instances all left (kept for their requests)
  std::unique_ptr<planes::event_subscriber> subscriber;
  std::unique_ptr<planes::discovery_watch> watch;

  // On the event plane's thread: a worker's load report goes to its router
  // (its KV capacity, with --router-kv-capacity; subscribed only then).
  void on_load(const planes::event_envelope& env) {
    auto load = protocol::decode<protocol::load_metrics>(env.payload);
    if (!load)
      return;
    std::shared_ptr<actor_handle> router;
    {
      std::lock_guard lk{mtx};
      auto it = instances.find(load->worker_id);
      if (it == instances.end())
        return;
      router = it->second.router;
    }
    caf::anon_send(router->get(), worker_load_atom::value, std::move(*load));
  }

  // On the event plane's thread: queue the event for its router, and wake the
  // router only when its inbox was empty (one message per burst).
  void on_kv_event(const planes::event_envelope& env) {
    if (env.topic == protocol::load_metrics_topic)
      return on_load(env);
    auto ev = protocol::decode<protocol::router_event>(env.payload);
    if (!ev)
      return;
    std::shared_ptr<actor_handle> router;
    kv_event_inbox_ptr inbox;
    {
      std::lock_guard lk{mtx};
      auto it = instances.find(ev->worker_id);
      if (it == instances.end())
        return;
      router = it->second.router;
      inbox = it->second.kv_inbox;
    }
    if (inbox->push(std::move(*ev)))
      caf::anon_send(router->get(), kv_events_atom::value, inbox);
  }

  /// REQUIRES: mtx held.
  kv_event_inbox_ptr& inbox_of(const std::shared_ptr<actor_handle>& router) {
    auto& inbox = kv_inboxes[router];
    if (!inbox)
      inbox = std::make_shared<kv_event_inbox>();
    return inbox;
  }

  /// REQUIRES: mtx held. The model's card advertises the largest context of
  /// its (aggregated or decode) instances, so that the frontend's length check
  /// refuses only a prompt that fits none of them (the router sends the others
  /// to one they fit). Offers the model again when that changed.
  void update_context(const std::string& name) {
    auto it = models.find(name);
    if (it == models.end() || unlisted.count(name))
      return;
    uint32_t widest = 0;
    for (uint64_t id : instances_by_model[name])
      if (auto e = instances.find(id); e != instances.end() && !e->second.prefill)
        widest = std::max(widest, e->second.info.context_length);
    if (widest == 0 || widest == it->second.card.context_length)
      return;
    spdlog::info("model {}: context length {} (the largest of its workers')", name, widest);
    it->second.card.context_length = widest;
    if (cfg.on_model_added)
      cfg.on_model_added(it->second);
  }

  served_model* ensure_model(const protocol::model_card& card) {
    if (auto it = models.find(card.name); it != models.end()) {
      if (!unlisted.count(card.name))
        return &it->second;
      // Its workers are back. Same card: list the same router and client
      // again (requests parked on them meanwhile go on); else start afresh.
      unlisted.erase(card.name);
      const auto& old = it->second.card;
      if (old.source == card.source && old.kv_block_size == card.kv_block_size) {
        if (cfg.on_model_added)
          cfg.on_model_added(it->second);
        return &it->second;
      }
      retire(it->second);
      models.erase(it);
    }
    auto assets = loader(card);
    if (!assets) {
      spdlog::error("model {}: cannot load tokenizer/template from '{}': {}", card.name,
                    card.source, describe(assets.error()));
      return nullptr;
    }
    served_model m;
    m.card = card;
    m.tokenizer = assets->tokenizer;
    m.chat_template = assets->chat_template;
    auto rc = cfg.router;
    rc.name = "router[" + card.name + "]";
    rc.block_size = card.kv_block_size;
    auto sr = spawn_supervised_router(*sys, rc, shared_client(), on_router_restart());
    m.router = sr.handle;
    m.router_supervisor = sr.supervisor;
    m.client = std::make_shared<routed_client>(m.router, cfg.client);
    auto [it, _] = models.emplace(card.name, std::move(m));
    spdlog::info("model {} available (source {}, block size {})", card.name, card.source,
                 card.kv_block_size);
    if (cfg.on_model_added)
      cfg.on_model_added(it->second);
    return &it->second;
  }

  void on_added_or_updated(const planes::instance_record& rec) {
    auto card = protocol::decode<protocol::model_card>(rec.payload);
    if (!card) {
      spdlog::warn("instance {}: unreadable model card: {}", rec.key(), describe(card.error()));
      return;
    }
    worker_info info{rec.instance, rec.request_address, rec.endpoint.path(),
                     rec.health == planes::health_state::ready, card->context_length};
    auto role = rec.metadata.find(std::string{protocol::role_metadata_key});
    bool is_prefill = role != rec.metadata.end() &&
                      protocol::parse_disagg_role(role->second) == protocol::disagg_role::prefill;
    bool connect = false;
    std::shared_ptr<actor_handle> router;
    {
      std::lock_guard lk{mtx};
      auto* m = ensure_model(*card);
      if (!m)
        return;
      router = m->router;
      if (is_prefill) {
        if (!m->prefill) {
          m->prefill = std::make_shared<prefill_pool>();
          auto rc = cfg.router;
          rc.name = "prefill-router[" + card->name + "]";
          rc.block_size = card->kv_block_size;
          auto sr = spawn_supervised_router(*sys, rc, shared_client(), on_router_restart());
          m->prefill->router = sr.handle;
          m->prefill->supervisor = sr.supervisor;
          m->client->set_prefill_pool(m->prefill);
          spdlog::info("model {}: disaggregated (prefill workers present)", card->name);
        }
        router = m->prefill->router;
      }
      auto& entry = instances[rec.instance];
      if (is_prefill && !entry.prefill)
        m->prefill->instances++;
      auto relay = std::move(entry.relay);
      auto relay_router = std::move(entry.relay_router);
      entry = {card->name, rec.event_address, router, inbox_of(router), info,
               is_prefill || entry.prefill, std::move(relay), std::move(relay_router)};
      connect = instances_by_model[card->name].insert(rec.instance).second;
      update_context(card->name);
    }
    if (connect && !rec.event_address.empty())
      if (auto ok = subscriber->connect(rec.event_address); !ok)
        spdlog::warn("cannot subscribe to {}: {}", rec.event_address, describe(ok.error()));
    update_relay(rec, card->kv_block_size);
    caf::anon_send(router->get(), add_worker_atom::value, info);
  }

  // Starts, replaces or stops the relay of an instance whose engine publishes
  // vLLM-format KV events (metadata protocol::zmq_kv_*), before its router
  // learns of it, so the router's first resync finds the relay.
  void update_relay(const planes::instance_record& rec, uint32_t block_size) {
    auto cfg = vllm_kv_relay_config_of(rec.metadata, rec.instance, block_size);
    if (!cfg) {
      spdlog::warn("instance {}: {}; its KV events are not relayed", rec.key(),
                   describe(cfg.error()));
      cfg = std::optional<vllm_kv_relay_config>{};
    }
    std::shared_ptr<vllm_kv_relay> old, fresh;
    std::shared_ptr<actor_handle> router;
    kv_event_inbox_ptr inbox;
    {
      std::lock_guard lk{mtx};
      auto it = instances.find(rec.instance);
      if (it == instances.end())
        return;
      auto& e = it->second;
      if (e.relay && *cfg && e.relay->config() == **cfg && e.relay_router == e.router)
        return; // unchanged
      old = std::move(e.relay);
      router = e.router;
      inbox = e.kv_inbox;
    }
    if (*cfg) {
      auto sink = [router, inbox](std::vector<protocol::router_event> events) {
        bool wake = false;
        for (auto& ev : events)
          if (inbox->push(std::move(ev)))
            wake = true;
        if (wake)
          caf::anon_send(router->get(), kv_events_atom::value, inbox);
      };
      auto started = vllm_kv_relay::start(**cfg, std::move(sink));
      if (!started)
        spdlog::warn("instance {}: cannot relay its KV events: {}", rec.key(),
                     describe(started.error()));
      else
        fresh = std::move(*started);
    }
    std::lock_guard lk{mtx};
    if (auto it = instances.find(rec.instance); it != instances.end()) {
      it->second.relay = std::move(fresh);
      it->second.relay_router = router;
    }
    // `old` (and `fresh`, if the instance left meanwhile) stop here, outside mtx.
  }

  // The router's resync request for a worker whose KV events are relayed here.
  std::optional<protocol::kv_replay> relay_answer(const protocol::kv_resync_request& req) {
    std::shared_ptr<vllm_kv_relay> relay;
    {
      std::lock_guard lk{mtx};
      auto it = instances.find(req.worker_id);
      if (it == instances.end() || !it->second.relay)
        return std::nullopt;
      relay = it->second.relay;
    }
    return relay->answer(req);
  }

  void on_removed(const planes::instance_record& rec) {
    std::shared_ptr<vllm_kv_relay> relay;
    std::string event_addr, model_name;
    std::shared_ptr<actor_handle> router;
    bool last = false;
    {
      std::lock_guard lk{mtx};
      auto it = instances.find(rec.instance);
      if (it == instances.end())
        return;
      model_name = it->second.model;
      event_addr = it->second.event_address;
      router = it->second.router;
      if (it->second.prefill && models[model_name].prefill)
        models[model_name].prefill->instances--;
      relay = std::move(it->second.relay); // stopped below, outside mtx
      instances.erase(it);
      auto& set = instances_by_model[model_name];
      set.erase(rec.instance);
      last = set.empty();
      if (!last)
        update_context(model_name);
    }
    if (!event_addr.empty())
      (void) subscriber->disconnect(event_addr);
    relay.reset();
    if (router)
      caf::anon_send(router->get(), remove_worker_atom::value, rec.instance);
    if (last) {
      // Unlisted, not destroyed: requests in flight hold its router and park
      // there (router_actor_config::no_worker_wait) until workers return.
      spdlog::warn("model {}: last instance gone", model_name);
      if (cfg.on_model_removed)
        cfg.on_model_removed(model_name);
      std::lock_guard lk{mtx};
      if (instances_by_model[model_name].empty())
        unlisted.insert(model_name);
    }
  }

  static void retire(served_model& m) {
    caf::anon_send_exit(m.router_supervisor, caf::exit_reason::user_shutdown);
    if (m.prefill)
      caf::anon_send_exit(m.prefill->supervisor, caf::exit_reason::user_shutdown);
  }

  // A restarted router knows no workers: tell it the ones it had (it then
  // asks each for a KV dump, rebuilding its index).
  void readd_workers(const std::shared_ptr<actor_handle>& router) {
    std::vector<worker_info> infos;
    kv_event_inbox_ptr inbox;
    {
      std::lock_guard lk{mtx};
      for (const auto& [id, e] : instances)
        if (e.router == router)
          infos.push_back(e.info);
      inbox = inbox_of(router);
    }
    spdlog::warn("router restarted; re-adding its {} worker(s)", infos.size());
    for (auto& info : infos)
      caf::anon_send(router->get(), add_worker_atom::value, info);
    // The wake-up for events still waiting may have died with the old incarnation.
    caf::anon_send(router->get(), kv_events_atom::value, inbox);
  }

  std::function<void(const std::shared_ptr<actor_handle>&)> on_router_restart() {
    return [weak = weak_self](const std::shared_ptr<actor_handle>& router) {
      if (auto self = weak.lock())
        self->readd_workers(router);
    };
  }

  std::shared_ptr<planes::request_client> shared_client() {
    if (!client)
      client = planes::make_zmq_request_client({{}, cfg.curve});
    return client;
  }
  std::shared_ptr<planes::request_client> client;
};

expected<std::unique_ptr<model_watcher>>
model_watcher::start(caf::actor_system& sys, planes::discovery_plane& discovery,
                     model_watcher_config cfg, model_assets_loader loader) {
  std::unique_ptr<model_watcher> w(new model_watcher());
  w->impl_ = std::make_shared<impl>();
  w->impl_->weak_self = w->impl_;
  auto* p = w->impl_.get();
  p->sys = &sys;
  p->cfg = std::move(cfg);
  p->loader = std::move(loader);
  p->cfg.router.local_resync = [weak = p->weak_self](const protocol::kv_resync_request& req) {
    auto self = weak.lock();
    return self ? self->relay_answer(req) : std::nullopt;
  };
  planes::zmq_event_subscriber_options so;
  so.curve = p->cfg.curve;
  so.callbacks.on_event = [p](const planes::event_envelope& env) { p->on_kv_event(env); };
  so.callbacks.on_gap = [](const planes::event_gap& gap) {
    // A late join or a dropped message. On the KV event topic the router's
    // event sequencer sees the same gap in the KV event ids and re-syncs from
    // the worker; on the load metrics topic the next report replaces the lost one.
    spdlog::debug("topic {} from {:016x}: missed #{}..#{} on the event plane", gap.topic, gap.publisher_id,
                  gap.expected, gap.got - 1);
  };
  p->subscriber = planes::make_zmq_event_subscriber(so);
  if (auto ok = p->subscriber->subscribe(std::string{protocol::kv_events_topic}); !ok)
    return ok.error();
  if (p->cfg.router.kv.router_kv_capacity)
    if (auto ok = p->subscriber->subscribe(std::string{protocol::load_metrics_topic}); !ok)
      return ok.error();
  auto endpoint = p->cfg.endpoint;
  auto components = p->cfg.components;
  auto watch = discovery.watch(p->cfg.namespace_name, [p, endpoint, components](
                                                          const planes::discovery_event& ev) {
    const auto& comp = ev.record.endpoint.component_name;
    bool wanted = components.empty()
                    ? comp != protocol::router_component
                    : std::find(components.begin(), components.end(), comp) != components.end();
    if (ev.record.endpoint.endpoint_name != endpoint || !wanted)
      return;
    if (ev.kind == planes::discovery_event_kind::removed)
      p->on_removed(ev.record);
    else
      p->on_added_or_updated(ev.record);
  });
  if (!watch)
    return watch.error();
  p->watch = std::move(*watch);
  return w;
}

model_watcher::~model_watcher() {
  impl_->watch.reset(); // no more callbacks
  std::lock_guard lk{impl_->mtx};
  for (auto& [name, m] : impl_->models)
    impl::retire(m);
}

std::vector<std::pair<std::string, caf::actor>> model_watcher::supervisors() const {
  std::lock_guard lk{impl_->mtx};
  std::vector<std::pair<std::string, caf::actor>> out;
  for (const auto& [name, m] : impl_->models) {
    out.emplace_back("router[" + name + "]-supervisor", m.router_supervisor);
    if (m.prefill)
      out.emplace_back("prefill-router[" + name + "]-supervisor", m.prefill->supervisor);
  }
  return out;
}

std::map<std::string, served_model> model_watcher::models() const {
  std::lock_guard lk{impl_->mtx};
  auto out = impl_->models;
  for (const auto& name : impl_->unlisted)
    out.erase(name);
  return out;
}

std::optional<route::vllm_relay_stats> model_watcher::kv_relay_stats(uint64_t instance) const {
  std::shared_ptr<vllm_kv_relay> relay;
  {
    std::lock_guard lk{impl_->mtx};
    auto it = impl_->instances.find(instance);
    if (it == impl_->instances.end() || !it->second.relay)
      return std::nullopt;
    relay = it->second.relay;
  }
  return relay->stats();
}

size_t model_watcher::instance_count(const std::string& model) const {
  std::lock_guard lk{impl_->mtx};
  auto it = impl_->instances_by_model.find(model);
  return it == impl_->instances_by_model.end() ? 0 : it->second.size();
}

} // namespace dynamo::actors
