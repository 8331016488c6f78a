#include "actors/router/router_actor.hpp"

#include "actors/core/supervisor.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/route/kv_router.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>
#include <unordered_map>

namespace dynamo::actors {

void route_job::cancel() {
  planes::call_handle h;
  {
    std::lock_guard lk{mtx};
    cancelled = true;
    h = call;
  }
  h.cancel();
}

namespace {

using first_token_atom = caf::atom_constant<caf::atom("firsttok")>;
using finished_atom = caf::atom_constant<caf::atom("finished")>;
using instance_down_atom = caf::atom_constant<caf::atom("instdown")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using replay_atom = caf::atom_constant<caf::atom("replay")>;
using resync_atom = caf::atom_constant<caf::atom("resync")>;
using clock = std::chrono::steady_clock;

struct instance_entry {
  worker_info info;
  clock::time_point down_until{};
};

struct router_state {
  router_actor_config cfg;
  std::shared_ptr<planes::request_client> client;
  std::unique_ptr<route::kv_router> router;
  std::unordered_map<uint64_t, instance_entry> instances;
  std::vector<route::worker_key> candidates; ///< scratch
  /// Jobs waiting for a worker, with their deadlines.
  std::vector<std::pair<route_ticket_ptr, clock::time_point>> parked;
  bool retry_scheduled = false;
  kv_event_inbox_ptr kv_inbox;            ///< the inbox KV events came from (its drop count)
  route::router_metrics::cursor published; ///< what this incarnation published so far
  static inline const char* name = "dynamo.router";
};

using metrics_tick_atom = caf::atom_constant<caf::atom("mtick")>;
constexpr std::chrono::seconds metrics_period{1};

using router_ptr = caf::stateful_actor<router_state>*;

// The KV-capacity rule, the capacities learned and the instances routed to,
// on /metrics and in the admin API (router_metrics::publish_capacities).
void publish_capacities(router_state& st) {
  if (!st.cfg.metrics)
    return;
  std::vector<uint64_t> ids;
  ids.reserve(st.instances.size());
  for (const auto& [id, e] : st.instances)
    ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  st.cfg.metrics->publish_capacities(st.cfg.name, *st.router, std::move(ids));
}

// Asks a worker for the KV events its router missed (or a full dump, when it
// joins); the answer comes back as a replay_atom. A failed call is retried a
// few times while the worker is known (research/dynamo.md 3.5). Workers whose
// events this process relays (external engines) are answered by their relay.
void request_resync(router_ptr self, const protocol::kv_resync_request& req, int attempt = 0) {
  auto& st = self->state;
  auto it = st.instances.find(req.worker_id);
  if (it == st.instances.end())
    return;
  if (st.cfg.local_resync)
    if (auto replay = st.cfg.local_resync(req))
      return st.router->on_replay(std::move(*replay));
  auto router = caf::actor_cast<caf::actor>(self);
  auto replay = std::make_shared<std::optional<protocol::kv_replay>>();
  (void) st.client->call(
    it->second.info.address, protocol::kv_resync_endpoint(it->second.info.endpoint_path), protocol::encode(req),
    [replay](planes::bytes item) {
      if (auto r = protocol::decode<protocol::kv_replay>(item))
        *replay = std::move(*r);
    },
    [router, replay, req, attempt](const caf::error& err) {
      if (!err && *replay)
        return caf::anon_send(router, replay_atom::value, std::move(**replay));
      if (attempt >= 5) {
        spdlog::warn("kv resync from worker {:016x} failed {} times ({}): its blocks stay unknown",
                     req.worker_id, attempt + 1, err ? describe(err) : "no answer");
        return;
      }
      caf::delayed_anon_send(router, std::chrono::milliseconds(200 << attempt), resync_atom::value, req,
                             attempt + 1);
    });
}

void fail_job(route_job_ptr job, caf::error err) {
  if (job->callbacks.on_end)
    job->callbacks.on_end(err);
}

// Starts the request-plane call for a routed job; chunks go straight to the
// job's callbacks on the plane's I/O thread.
void start_call(router_ptr self, const route_job_ptr& job, const instance_entry& inst) {
  auto router = caf::actor_cast<caf::actor>(self);
  auto id = job->request.request_id;
  auto instance = inst.info.instance_id;
  auto first = std::make_shared<bool>(true);
  auto finished = std::make_shared<bool>(false);
  auto on_item = [job, router, id, first, finished](planes::bytes item) {
    auto chunk = protocol::decode<protocol::engine_output>(item);
    if (!chunk)
      return; // counted by the codec; the stream's end reports the failure
    if (*first && (!chunk->token_ids.empty() || chunk->finish != protocol::finish_reason::none)) {
      *first = false;
      caf::anon_send(router, first_token_atom::value, id);
    }
    if (chunk->finish != protocol::finish_reason::none)
      *finished = true;
    job->callbacks.on_chunk(std::move(*chunk));
  };
  auto on_end = [job, router, id, instance, finished](const caf::error& err) {
    caf::anon_send(router, finished_atom::value, id);
    if (err && code_of(err) == errc::disconnected)
      caf::anon_send(router, instance_down_atom::value, instance);
    if (!err && !*finished)
      return fail_job(job, make_error(errc::disconnected, "stream ended without a final chunk"));
    fail_job(job, err);
  };
  if (job->callbacks.on_routed)
    job->callbacks.on_routed(instance);
  std::lock_guard lk{job->mtx};
  if (job->cancelled) {
    caf::anon_send(router, finished_atom::value, id);
    return fail_job(job, make_error(errc::cancelled, "cancelled before routing"));
  }
  job->call = self->state.client->call(inst.info.address, inst.info.endpoint_path,
                                       protocol::encode(job->request), std::move(on_item),
                                       std::move(on_end));
}

// Whether `tokens` leave room for an output token in `inst`'s context (the
// engine refuses a request otherwise); unknown contexts fit.
bool fits_context(const instance_entry& inst, size_t tokens) {
  return inst.info.context_length == 0 || tokens < inst.info.context_length;
}

// Healthy, reachable instances; those the job failed on only when nothing else
// is left. Instances whose advertised context the request does not fit are
// dropped when another fits (workers of one model can be started with
// different --context-length); when none fits, the worker's refusal is the answer.
void collect_candidates(router_ptr self, const route_job& job) {
  auto& st = self->state;
  auto now = clock::now();
  st.candidates.clear();
  for (int pass = 0; pass < 2 && st.candidates.empty(); ++pass) {
    for (auto& [id, inst] : st.instances) {
      bool excluded = std::find(job.exclude.begin(), job.exclude.end(), id) != job.exclude.end();
      if (inst.info.healthy && inst.down_until <= now && (pass == 1 || !excluded))
        st.candidates.push_back({id, 0});
    }
  }
  const size_t tokens = job.request.token_ids.size();
  auto too_small = [&](const route::worker_key& w) { return !fits_context(st.instances.at(w.worker_id), tokens); };
  if (!job.request.backend_instance_id && !std::all_of(st.candidates.begin(), st.candidates.end(), too_small))
    std::erase_if(st.candidates, too_small);
  std::sort(st.candidates.begin(), st.candidates.end()); // deterministic round-robin order
}

void schedule_retry(router_ptr self) {
  if (!self->state.retry_scheduled) {
    self->state.retry_scheduled = true;
    self->delayed_send(self, std::chrono::milliseconds(20), retry_atom::value);
  }
}

// Routes the ticket's job, or parks it until a worker is available; false
// when parked. Taking the job out of the ticket marks it delivered.
bool route(router_ptr self, const route_ticket_ptr& ticket, clock::time_point deadline) {
  auto& st = self->state;
  collect_candidates(self, *ticket->job);
  if (st.candidates.empty() && clock::now() < deadline) {
    st.parked.emplace_back(ticket, deadline);
    schedule_retry(self);
    return false;
  }
  auto job = std::move(ticket->job);
  if (st.candidates.empty()) {
    fail_job(job, make_error(errc::no_workers, "no healthy worker serves this model"));
    return true;
  }
  route::route_request rr;
  rr.request_id = job->request.request_id;
  rr.tokens = job->request.token_ids;
  rr.candidates = st.candidates;
  rr.overrides = job->overrides;
  if (job->request.backend_instance_id)
    rr.pinned = route::worker_key{*job->request.backend_instance_id, 0};
  auto decision = st.router->route(rr);
  if (!decision) {
    fail_job(job, decision.error());
    return true;
  }
  auto it = st.instances.find(decision->worker.worker_id);
  spdlog::debug("{}: {} -> {:016x} (overlap {} blocks)", st.cfg.name, rr.request_id,
                decision->worker.worker_id, decision->overlap_blocks);
  start_call(self, job, it->second);
  return true;
}

void retry_parked(router_ptr self) {
  auto& st = self->state;
  st.retry_scheduled = false;
  auto parked = std::move(st.parked);
  st.parked.clear();
  for (auto& [ticket, deadline] : parked) {
    bool cancelled;
    {
      std::lock_guard lk{ticket->job->mtx};
      cancelled = ticket->job->cancelled;
    }
    if (cancelled)
      fail_job(std::move(ticket->job), make_error(errc::cancelled, "cancelled while waiting for a worker"));
    else
      (void) route(self, ticket, deadline);
  }
}

} // namespace

route_ticket::~route_ticket() {
  if (job)
    fail_job(std::move(job), make_error(errc::disconnected, "the router is gone"));
}

void send_route(const caf::actor& router, route_job_ptr job, std::chrono::milliseconds delay) {
  auto ticket = std::make_shared<route_ticket>();
  ticket->job = std::move(job);
  if (!router)
    return; // the ticket fails the job
  if (delay.count() > 0)
    caf::delayed_anon_send(router, delay, route_atom::value, std::move(ticket));
  else
    caf::anon_send(router, route_atom::value, std::move(ticket));
}

supervised_router spawn_supervised_router(caf::actor_system& sys, router_actor_config cfg,
                                          std::shared_ptr<planes::request_client> client,
                                          std::function<void(const std::shared_ptr<actor_handle>&)> on_restart) {
  supervised_router out;
  out.handle = std::make_shared<actor_handle>();
  child_spec spec;
  spec.name = cfg.name;
  spec.policy = restart_policy::transient;
  // The first incarnation is spawned here, so the handle is valid on return
  // (the supervisor spawns its children asynchronously); it adopts it.
  auto initial = std::make_shared<caf::actor>(spawn_router(sys, cfg, client));
  out.handle->set(*initial);
  spec.spawn = [cfg, client, initial](caf::actor_system& s) {
    if (*initial)
      return std::exchange(*initial, caf::actor{});
    return spawn_router(s, cfg, client);
  };
  auto first = std::make_shared<bool>(true);
  spec.on_spawn = [h = out.handle, first, on_restart](const caf::actor& a) {
    h->set(a);
    if (!*first && on_restart)
      on_restart(h);
    *first = false;
  };
  supervisor_config sc;
  sc.name = cfg.name + "-supervisor";
  out.supervisor = spawn_supervisor(sys, sc, {spec});
  return out;
}

caf::actor spawn_router(caf::actor_system& sys, router_actor_config cfg,
                        std::shared_ptr<planes::request_client> client) {
  return sys.spawn([cfg, client](router_ptr self) -> caf::behavior {
    auto& st = self->state;
    st.cfg = cfg;
    st.client = client;
    uint64_t seed = cfg.seed != 0 ? cfg.seed : std::random_device{}();
    // Resync requests come from the router's event threads: they reach this
    // actor as messages (by address, so the router does not keep it alive).
    auto sink = [addr = self->address()](protocol::kv_resync_request req) {
      if (auto me = caf::actor_cast<caf::actor>(addr))
        caf::anon_send(me, resync_atom::value, std::move(req), 0);
    };
    st.router = std::make_unique<route::kv_router>(cfg.kv, cfg.block_size, cfg.mode, seed, sink);
    if (cfg.metrics) {
      publish_capacities(st); // the rule, before any worker joins
      self->delayed_send(self, metrics_period, metrics_tick_atom::value);
    }
    return {
      [self](add_worker_atom, const worker_info& w) {
        auto& st = self->state;
        bool fresh = !st.instances.count(w.instance_id);
        auto& e = st.instances[w.instance_id];
        e.info = w;
        e.down_until = {};
        if (fresh) {
          st.router->add_worker({w.instance_id, 0}); // its dump request comes back as resync_atom
          spdlog::info("{}: worker {:016x} at {} joined", st.cfg.name, w.instance_id, w.address);
          publish_capacities(st);
        }
      },
      [self](remove_worker_atom, uint64_t id) {
        auto& st = self->state;
        if (st.instances.erase(id)) {
          st.router->remove_worker(id);
          spdlog::info("{}: worker {:016x} left", st.cfg.name, id);
          publish_capacities(st);
        }
      },
      [self](worker_load_atom, const protocol::load_metrics& load) {
        auto& st = self->state;
        // Kept even before add_worker: a report can overtake it (model_watcher
        // forwards from the event thread); the watcher drops those of gone workers.
        if (st.router->set_worker_capacity({load.worker_id, load.dp_rank}, load.total_blocks)) {
          spdlog::info("{}: worker {:016x} holds {} KV blocks", st.cfg.name, load.worker_id,
                       load.total_blocks);
          publish_capacities(st);
        }
      },
      [self](instance_down_atom, uint64_t id) {
        auto& st = self->state;
        if (auto it = st.instances.find(id); it != st.instances.end()) {
          bool fresh = it->second.down_until <= clock::now();
          it->second.down_until = clock::now() + st.cfg.quarantine;
          if (fresh)
            spdlog::warn("{}: worker {:016x} unreachable; skipped for {} ms", st.cfg.name, id,
                         st.cfg.quarantine.count());
        }
      },
      [self](kv_events_atom, kv_event_inbox_ptr& inbox) {
        auto events = inbox->take();
        self->state.router->on_events(events);
        self->state.kv_inbox = inbox;
      },
      [self](metrics_tick_atom) {
        auto& st = self->state;
        uint64_t dropped = st.kv_inbox ? st.kv_inbox->dropped() : 0;
        st.cfg.metrics->publish(st.cfg.name, st.router->index(), dropped, st.published);
        publish_capacities(st); // a restarted router's stale series go
        self->delayed_send(self, metrics_period, metrics_tick_atom::value);
      },
      [self](replay_atom, protocol::kv_replay& replay) {
        self->state.router->on_replay(std::move(replay));
      },
      [self](resync_atom, const protocol::kv_resync_request& req, int attempt) {
        request_resync(self, req, attempt);
      },
      [self](route_atom, route_ticket_ptr& ticket) {
        if (ticket->job)
          (void) route(self, ticket, clock::now() + self->state.cfg.no_worker_wait);
      },
      [self](peek_atom, peek_job_ptr& job) {
        auto& r = *self->state.router;
        auto answer = std::exchange(job->answer, nullptr);
        answer(r.best_overlap_blocks(job->tokens) * r.block_size());
      },
      [self](retry_atom) { retry_parked(self); },
      [](crash_atom) { throw std::runtime_error("crash requested (test hook)"); },
      [self](first_token_atom, const std::string& id) {
        (void) self->state.router->mark_prefill_completed(id);
      },
      [self](finished_atom, const std::string& id) { (void) self->state.router->free(id); },
      [self](workers_atom) {
        std::vector<worker_info> out;
        for (auto& [id, e] : self->state.instances)
          out.push_back(e.info);
        return out;
      },
    };
  });
}

} // namespace dynamo::actors
