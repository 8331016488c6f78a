// The worker actor's disaggregation hand-off (research/dynamo.md 4): prefill
// workers hold a prompt's blocks and push them on request; decode workers pull
// them, then the engine continues as if it had prefilled locally. A failed or
// timed-out pull makes the engine prefill locally: no request is lost.
#include "actors/worker/kv_handoff.hpp"
#include "actors/worker/worker_state.hpp"
#include "runtime/disagg/disagg_connector.hpp"
#include "runtime/protocol/codec.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace dynamo::actors::internal {

void fill_prefill_result(worker_ptr self, protocol::engine_output& chunk) {
  auto r = protocol::decode<protocol::kv_prefill_result>(chunk.disagg);
  if (!r)
    return;
  auto& st = self->state;
  r->prefill_worker_id = st.cfg.instance_id;
  r->transfer_address = st.cfg.transfer_address;
  r->transfer_endpoint = st.cfg.kv_push_endpoint;
  chunk.disagg = protocol::encode(*r);
}

void release_remote_hold(worker_ptr self, const protocol::kv_prefill_result& source) {
  auto& st = self->state;
  if (!st.cfg.handoff || source.transfer_address.empty())
    return; // the hold expires on the prefill worker
  st.cfg.handoff->pull(source, disagg::release_request(source), [](caf::error) {});
}

void start_pending_pulls(worker_ptr self) {
  auto& st = self->state;
  if (st.cfg.role != protocol::disagg_role::decode || !st.cfg.handoff)
    return;
  auto pulls = st.engine->pending_transfers();
  if (pulls.empty())
    return;
  auto mem = st.engine->exec().kv_memory();
  auto me = caf::actor_cast<caf::actor>(self);
  for (auto& p : pulls) {
    auto id = p.request_id;
    protocol::kv_push_request req = disagg::push_request(p);
    std::chrono::microseconds simulated{0};
    if (mem) {
      auto offers = st.cfg.handoff->receiver_offers(*mem);
      if (!offers) {
        handle_pull_done(self, id, false, describe(offers.error()));
        continue;
      }
      req.layout = mem->layout;
      req.offers = std::move(*offers);
    } else {
      // No KV bytes (mocker): the prefill worker checks and releases its hold
      // (so a lost prefill worker fails the pull as it would with bytes), and
      // the transfer time is simulated from the layout.
      simulated = st.cfg.handoff->simulated_time(p.source.layout, p.source_block_ids.size());
    }
    st.cfg.handoff->pull(p.source, std::move(req), [me, id, simulated](caf::error err) {
      std::string why = err ? describe(err) : std::string{};
      if (simulated.count() > 0 && !err)
        caf::delayed_anon_send(me, simulated, pull_done_atom::value, id, true, std::move(why));
      else
        caf::anon_send(me, pull_done_atom::value, id, !err, std::move(why));
    });
    // A pull that never answers falls back to local prefill.
    self->delayed_send(self, st.cfg.handoff->config().timeout + simulated + std::chrono::seconds(1),
                       pull_done_atom::value, id, false, std::string{"kv pull timed out"});
  }
}

void handle_pull_done(worker_ptr self, const std::string& request_id, bool ok, const std::string& why) {
  auto& st = self->state;
  if (!st.engine->complete_transfer(request_id, ok))
    return; // already completed (a late timeout or a late success)
  if (!ok)
    spdlog::warn("{}: KV pull for {} failed ({}); prefilling locally", st.cfg.name, request_id, why);
  // The prefill worker's first token goes to the client now, not with the
  // results of the next forward pass (a whole decode step of TTFT).
  deliver_now(self, st.engine->take_pending());
  schedule_step(self);
}

namespace {

void reply(const kv_push_job_ptr& job, protocol::kv_transfer_status status) {
  if (job->reply)
    job->reply(status);
}

} // namespace

void handle_kv_push(worker_ptr self, const kv_push_job_ptr& job) {
  auto& st = self->state;
  auto& req = job->request;
  if (auto ok = disagg::check_push(req, st.engine->held_blocks(req.hold_id)); !ok)
    return reply(job, protocol::failed_status(0, st.cfg.instance_id, ok.error()));
  auto mem = st.engine->exec().kv_memory();
  if (req.source_block_ids.empty() || !mem || !st.cfg.handoff) {
    // A pure release (or a mocker: no bytes to move).
    if (req.release)
      (void) st.engine->release_hold(req.hold_id);
    protocol::kv_transfer_status ok;
    ok.source_worker_id = st.cfg.instance_id;
    return reply(job, ok);
  }
  auto me = caf::actor_cast<caf::actor>(self);
  st.cfg.handoff->push(*mem, req, [me, job](protocol::kv_transfer_status status) {
    caf::anon_send(me, push_done_atom::value, job, std::move(status));
  });
}

void handle_push_done(worker_ptr self, const kv_push_job_ptr& job,
                      const protocol::kv_transfer_status& status) {
  if (job->request.release)
    (void) self->state.engine->release_hold(job->request.hold_id);
  if (!status.ok())
    spdlog::warn("{}: KV push of {} failed: {}", self->state.cfg.name, job->request.hold_id,
                 status.message);
  reply(job, status);
}

void expire_holds(worker_ptr self) {
  auto& st = self->state;
  if (auto n = st.engine->release_expired_holds(clock::now(), st.cfg.hold_ttl); n > 0)
    spdlog::warn("{}: freed {} prefill hold(s) nobody pulled within {} ms", st.cfg.name, n,
                 st.cfg.hold_ttl.count());
}

} // namespace dynamo::actors::internal
