#include "actors/worker/worker_actor.hpp"

#include "actors/core/supervisor.hpp"
#include "actors/worker/worker_state.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace dynamo::actors {

using namespace internal;

namespace {

void publish_load(worker_ptr self, bool force) {
  auto& st = self->state;
  auto now = clock::now();
  if (!st.hooks.on_load || (!force && now - st.last_load < st.cfg.load_interval))
    return;
  st.last_load = now;
  auto m = st.engine->load_metrics();
  m.worker_id = st.cfg.instance_id;
  st.hooks.on_load(m);
}

} // namespace

void internal::schedule_step(worker_ptr self) {
  if (!self->state.step_scheduled) {
    self->state.step_scheduled = true;
    self->send(self, step_atom::value);
  }
}

namespace {

// Hands a step's chunks to their sinks; a sink that refuses aborts its request.
void deliver(worker_ptr self, engine::step_result& r) {
  auto& st = self->state;
  if (!r.kv_events.empty() && st.hooks.on_kv_events)
    st.hooks.on_kv_events(std::move(r.kv_events));
  for (auto& out : r.outputs) {
    auto it = st.sinks.find(out.request_id);
    if (it == st.sinks.end())
      continue;
    bool last = out.output.finish != protocol::finish_reason::none;
    if (last && !out.output.disagg.empty())
      fill_prefill_result(self, out.output);
    if (!st.healthy && out.output.finish == protocol::finish_reason::error && out.output.error_code == 0)
      out.output.error_code = static_cast<uint8_t>(errc::device_error); // failed with the executor
    if (!it->second->send(out.output) && !last)
      (void) st.engine->abort(out.request_id);
    if (last)
      st.sinks.erase(it);
  }
  r = {};
  publish_load(self, false);
}

} // namespace

void internal::deliver_now(worker_ptr self, std::vector<engine::request_output> outputs) {
  if (outputs.empty())
    return;
  engine::step_result r;
  r.outputs = std::move(outputs);
  deliver(self, r);
}

namespace {

void after_step(worker_ptr self) {
  auto& st = self->state;
  st.step_scheduled = false;
  start_pending_pulls(self);
  if (st.engine->has_work())
    schedule_step(self);
  else
    publish_load(self, true);
}

void run_step(worker_ptr self) {
  auto& st = self->state;
  const auto began = clock::now();
  auto r = st.engine->step();
  if (!r) {
    spdlog::error("{}: engine step failed: {}; marking unhealthy", st.cfg.name, describe(r.error()));
    if (st.healthy && st.hooks.on_health)
      st.hooks.on_health(false, describe(r.error()));
    st.healthy = false;
    after_step(self); // the engine queued an error chunk per request
    return;
  }
  if (r->num_seqs > 0 && st.hooks.on_step)
    st.hooks.on_step(r->duration.count() > 0 ? std::chrono::duration<double>(r->duration) : clock::now() - began,
                     r->num_tokens);
  if (r->duration.count() > 0) {
    st.pending = std::move(*r);
    self->delayed_send(self, r->duration, deliver_atom::value);
    return;
  }
  deliver(self, *r);
  after_step(self);
}

// How often expired prefill holds are looked for (a quarter of their TTL) and
// the load heartbeat is due: 10 ms..1 s.
std::chrono::milliseconds housekeeping_interval(const worker_config& cfg) {
  return std::clamp(std::min(cfg.hold_ttl / 4, cfg.load_heartbeat), std::chrono::milliseconds{10},
                    std::chrono::milliseconds{1000});
}

void reject(const generate_job& job, errc code, std::string why) {
  protocol::engine_output out;
  out.finish = protocol::finish_reason::error;
  out.error = std::move(why);
  out.error_code = static_cast<uint8_t>(code);
  (void) job.sink->send(out);
}

} // namespace

caf::actor spawn_worker(caf::actor_system& sys, worker_config cfg, engine_factory factory,
                        worker_hooks hooks) {
  auto body = [cfg, factory, hooks](worker_ptr self) -> caf::behavior {
    auto& st = self->state;
    // Keep the exception text in the exit reason so the supervisor logs why.
    self->set_exception_handler([](caf::scheduled_actor*, std::exception_ptr& ep) -> caf::error {
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        return caf::make_error(caf::sec::runtime_error, std::string{e.what()});
      } catch (...) {
        return caf::make_error(caf::sec::runtime_error, "unknown exception");
      }
    });
    st.cfg = cfg;
    st.hooks = hooks;
    auto engine = factory();
    if (!engine) {
      spdlog::error("{}: cannot create engine: {}", cfg.name, describe(engine.error()));
      self->quit(caf::make_error(caf::sec::runtime_error, describe(engine.error())));
      return {};
    }
    st.engine = std::move(*engine);
    // Blocks it starts with (KVBM disk blocks of an earlier run), right after
    // this incarnation's "cleared": routers know them before any request.
    if (auto evs = st.engine->take_kv_events(); !evs.empty() && st.hooks.on_kv_events)
      st.hooks.on_kv_events(std::move(evs));
    publish_load(self, true);
    self->delayed_send(self, housekeeping_interval(cfg), housekeep_atom::value);
    return {
      [self](generate_atom, generate_job_ptr& job) {
        auto& st = self->state;
        if (!st.healthy)
          return reject(*job, errc::device_error, "worker " + st.cfg.name + " is unhealthy");
        if (st.draining)
          return reject(*job, errc::closed, "worker " + st.cfg.name + " is draining");
        auto id = job->request.request_id;
        if (auto ok = st.engine->add_request(std::move(job->request)); !ok)
          return reject(*job, code_of(ok.error()), describe(ok.error()));
        st.sinks[id] = std::move(job->sink);
        for (const auto& refused : st.engine->take_refused_prefills())
          release_remote_hold(self, refused);
        start_pending_pulls(self);
        schedule_step(self);
      },
      [self](kv_push_atom, kv_push_job_ptr& job) { handle_kv_push(self, job); },
      [self](push_done_atom, kv_push_job_ptr& job, const protocol::kv_transfer_status& status) {
        handle_push_done(self, job, status);
      },
      [self](pull_done_atom, const std::string& id, bool ok, const std::string& why) {
        handle_pull_done(self, id, ok, why);
      },
      [self](housekeep_atom) {
        expire_holds(self);
        auto& st = self->state;
        if (clock::now() - st.last_load >= st.cfg.load_heartbeat)
          publish_load(self, true);
        self->delayed_send(self, housekeeping_interval(self->state.cfg), housekeep_atom::value);
      },
      [self](abort_atom, const std::string& request_id) {
        if (!self->state.engine->abort(request_id))
          return;
        for (const auto& unpulled : self->state.engine->take_refused_prefills())
          release_remote_hold(self, unpulled);
        schedule_step(self);
      },
      [self](step_atom) { run_step(self); },
      [self](deliver_atom) {
        deliver(self, self->state.pending);
        after_step(self);
      },
      [self](drain_atom, bool on) { self->state.draining = on; },
      [self](inflight_atom) { return static_cast<uint32_t>(self->state.sinks.size()); },
      [self](crash_atom) { throw std::runtime_error("crash requested (test hook)"); },
    };
  };
  if (cfg.detached)
    return sys.spawn<caf::detached>(std::move(body));
  return sys.spawn(std::move(body));
}

} // namespace dynamo::actors
