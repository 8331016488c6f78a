#include "actors/router/routed_client.hpp"

#include "actors/router/router_actor.hpp"
#include "runtime/disagg/prefill_first.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/output_error.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <utility>

namespace dynamo::actors {

bool is_migratable(errc code) noexcept {
  return code == errc::disconnected || code == errc::device_error || code == errc::closed;
}

namespace {

// One request across all the workers it visits.
struct migrating_request : engine::generation, std::enable_shared_from_this<migrating_request> {
  std::shared_ptr<actor_handle> router;
  std::shared_ptr<prefill_pool> prefill; ///< set when the prefill-first flow may be used
  routed_client_config cfg;
  std::shared_ptr<routed_client_stats> stats;
  engine::chunk_callback on_chunk;

  std::mutex mtx;
  protocol::preprocessed_request original;
  std::vector<uint32_t> generated; ///< tokens delivered to the caller so far
  std::vector<uint64_t> failed;    ///< instances that failed this request
  uint64_t current = 0;            ///< instance serving the current attempt
  uint32_t migrations = 0;         ///< attempts that failed after sending tokens
  uint32_t retries = 0;            ///< attempts that failed before their first token
  size_t attempt_start = 0;        ///< generated.size() when the current attempt began
  std::chrono::steady_clock::time_point first_failure{};
  bool cancelled = false;
  bool done = false;
  bool handoff_pending = false;    ///< decoding with a prefill result: not counted yet
  route_job_ptr job;

  void cancel() override {
    route_job_ptr j;
    {
      std::lock_guard lk{mtx};
      if (done || cancelled)
        return;
      cancelled = true;
      j = job;
    }
    if (j)
      j->cancel();
  }

  // Prefill-first (research/dynamo.md 4.1): the prompt runs on a prefill
  // worker with max_tokens 1; its result (held KV blocks + first token) goes
  // with the request to a decode worker, which pulls the blocks and streams.
  // Any failure before decoding starts falls back to a local prefill.
  void start_prefill() {
    auto j = std::make_shared<route_job>();
    {
      std::lock_guard lk{mtx};
      j->request = disagg::prefill_request(original);
      job = j;
    }
    auto self = shared_from_this();
    auto result = std::make_shared<std::optional<protocol::kv_prefill_result>>();
    j->callbacks.on_chunk = [result](protocol::engine_output chunk) {
      if (auto p = disagg::prefill_result_of(chunk))
        *result = std::move(*p);
    };
    j->callbacks.on_end = [self, result](const caf::error& err) {
      bool cancelled_now;
      {
        std::lock_guard lk{self->mtx};
        cancelled_now = self->cancelled;
      }
      if (cancelled_now)
        return self->end(make_error(errc::cancelled, "cancelled during remote prefill"));
      if (err || !*result) {
        spdlog::warn("request {}: remote prefill failed ({}); prefilling locally",
                     self->original.request_id, err ? describe(err) : "no prefill result");
        self->count_disagg(false);
        return self->start_attempt();
      }
      // Counted at the decode worker's first chunk: it may still prefill
      // locally (a refused result, a failed KV transfer).
      {
        std::lock_guard lk{self->mtx};
        self->handoff_pending = true;
      }
      self->start_attempt(std::chrono::milliseconds{0}, disagg::decode_params(std::move(**result)));
    };
    send_route(prefill->router->get(), j);
  }

  // The outcome of a prefill-first request: remote when the decode worker
  // used the prefill worker's KV, else local_fallback.
  void count_disagg(bool remote) {
    (remote ? stats->disagg_requests : stats->disagg_fallbacks)++;
    if (cfg.on_disagg)
      cfg.on_disagg(original.model, remote);
  }

  void start_attempt(std::chrono::milliseconds delay = std::chrono::milliseconds{0},
                     std::vector<uint8_t> disagg = {}) {
    auto j = std::make_shared<route_job>();
    {
      std::lock_guard lk{mtx};
      j->request = original;
      if (!disagg.empty()) {
        j->request.disagg = std::move(disagg);
        // Decode placement ignores KV overlap (the KV arrives with the request).
        j->overrides.overlap_score_weight = 0.0;
      }
      j->request.token_ids.insert(j->request.token_ids.end(), generated.begin(), generated.end());
      if (!generated.empty()) // the first chunk carried them
        j->request.sampling.prompt_logprobs.reset();
      j->request.stop.max_tokens -= static_cast<uint32_t>(generated.size());
      if (j->request.stop.min_tokens > generated.size())
        j->request.stop.min_tokens -= static_cast<uint32_t>(generated.size());
      else
        j->request.stop.min_tokens = 0;
      j->exclude = failed;
      attempt_start = generated.size();
      job = j;
    }
    auto self = shared_from_this();
    j->callbacks.on_routed = [self](uint64_t id) {
      std::lock_guard lk{self->mtx};
      self->current = id;
    };
    j->callbacks.on_chunk = [self](protocol::engine_output chunk) { self->chunk(std::move(chunk)); };
    j->callbacks.on_end = [self](const caf::error& err) { self->end(err); };
    send_route(router->get(), j, delay);
  }

  void chunk(protocol::engine_output c) {
    if (c.finish == protocol::finish_reason::error && is_migratable(protocol::error_code_of(c))) {
      // Swallow it: end() sees the stream finish and retries.
      std::lock_guard lk{mtx};
      pending_error = protocol::error_of(c);
      return;
    }
    std::optional<bool> handoff; // this chunk tells how the hand-off went
    {
      std::lock_guard lk{mtx};
      if (done)
        return;
      if (std::exchange(handoff_pending, false))
        handoff = !c.prefilled_locally;
      if (original.sampling.n > 1) // choices diverge: nothing to resume from (see decide_retry)
        delivered_choices = delivered_choices || !c.token_ids.empty();
      else
        generated.insert(generated.end(), c.token_ids.begin(), c.token_ids.end());
      if (c.finish != protocol::finish_reason::none)
        done = true;
    }
    if (handoff)
      count_disagg(*handoff);
    if (c.finish == protocol::finish_reason::error)
      return fail_with(std::move(c));
    on_chunk(std::move(c));
  }

  // A worker ended the stream with an error it cannot be migrated past (it
  // refused the request: too long for its context, an option it lacks): the
  // caller gets it as an error value with the worker's code, never as a final
  // chunk it might take for an empty success. Tokens it carried go first.
  void fail_with(protocol::engine_output c) {
    caf::error err = protocol::error_of(c);
    if (!c.token_ids.empty()) {
      c.finish = protocol::finish_reason::none;
      c.error.clear();
      c.error_code = 0;
      on_chunk(std::move(c));
    }
    on_chunk(std::move(err));
  }

  void end(const caf::error& err) {
    caf::error failure = err;
    std::chrono::milliseconds delay{0};
    bool retry = false;
    bool lost_handoff = false;
    {
      std::lock_guard lk{mtx};
      if (!failure && pending_error)
        failure = pending_error;
      pending_error = caf::error{};
      if (done)
        return;
      if (!failure) // cannot happen: the router turns a missing final chunk into an error
        failure = make_error(errc::internal, "stream ended without a final chunk");
      retry = decide_retry(failure, delay);
      if (!retry)
        done = true;
      // The decode worker failed before its first chunk: the retry prefills locally.
      lost_handoff = std::exchange(handoff_pending, false) && retry;
    }
    if (lost_handoff)
      count_disagg(false);
    if (retry)
      return start_attempt(delay);
    on_chunk(std::move(failure));
  }

  // Under mtx: whether to try again, and after how long.
  bool decide_retry(const caf::error& failure, std::chrono::milliseconds& delay) {
    auto code = code_of(failure);
    size_t seq_len = original.token_ids.size() + generated.size();
    bool room = cfg.migration_max_seq_len == 0 || seq_len <= cfg.migration_max_seq_len;
    // n > 1: one request, n sequences that no single prompt + output resumes;
    // it is retried only while no choice has delivered a token.
    const bool diverged = delivered_choices;
    if (cancelled || !is_migratable(code) || !room || diverged ||
        generated.size() >= original.stop.max_tokens) {
      if (is_migratable(code) && !cancelled)
        stats->migration_exhausted++;
      return false;
    }
    if (current != 0)
      failed.push_back(current);
    auto now = std::chrono::steady_clock::now();
    if (generated.size() == attempt_start) {
      // The worker never answered this attempt: retry within the window.
      if (retries == 0)
        first_failure = now;
      if (now - first_failure > cfg.retry_window) {
        stats->migration_exhausted++;
        return false;
      }
      ++retries;
      stats->retries++;
      delay = std::min(std::chrono::milliseconds(500),
                       std::chrono::milliseconds(20) * (1u << std::min(retries, 5u)));
    } else {
      if (migrations >= cfg.migration_limit) {
        stats->migration_exhausted++;
        return false;
      }
      ++migrations;
      retries = 0;
      delay = std::chrono::milliseconds(10);
    }
    (generated.empty() ? stats->migrations_new : stats->migrations_ongoing)++;
    if (cfg.on_migration)
      cfg.on_migration(original.model, !generated.empty());
    spdlog::warn("request {}: {} on worker {:016x}; {} with {} tokens generated (migrations {}/{}, retries {})",
                 original.request_id, describe(failure), current,
                 generated.size() == attempt_start ? "retrying" : "migrating", generated.size(),
                 migrations, cfg.migration_limit, retries);
    return true;
  }

  caf::error pending_error;
  bool delivered_choices = false; ///< n > 1: some choice got a token
};

} // namespace

routed_client::routed_client(std::shared_ptr<actor_handle> router, routed_client_config cfg)
  : router_(std::move(router)), cfg_(std::move(cfg)), stats_(std::make_shared<routed_client_stats>()) {}

routed_client::routed_client(caf::actor router, routed_client_config cfg)
  : routed_client(std::make_shared<actor_handle>(std::move(router)), std::move(cfg)) {}

void routed_client::set_prefill_pool(std::shared_ptr<prefill_pool> pool) {
  std::lock_guard lk{mtx_};
  prefill_ = std::move(pool);
}

std::shared_ptr<prefill_pool> routed_client::prefill() const {
  std::lock_guard lk{mtx_};
  return prefill_;
}

std::shared_ptr<engine::generation> routed_client::generate(protocol::preprocessed_request req,
                                                            engine::chunk_callback on_chunk) {
  auto r = std::make_shared<migrating_request>();
  r->router = router_;
  r->cfg = cfg_;
  r->stats = stats_;
  r->on_chunk = std::move(on_chunk);
  r->original = std::move(req);
  auto pool = prefill();
  uint32_t threshold = cfg_.max_local_prefill_length;
  // n > 1 is served aggregated: a prefill result carries one first token.
  if (!pool || !disagg::may_prefill_remotely(r->original, pool->instances.load(), threshold)) {
    r->start_attempt();
    return r;
  }
  // Conditional disaggregation (research/dynamo.md 4.3): what counts is the
  // prompt a decode worker would have to compute, after its cached prefix.
  r->prefill = std::move(pool);
  auto peek = std::make_shared<peek_job>();
  peek->tokens = r->original.token_ids;
  peek->answer = [r, threshold](uint32_t cached) {
    bool cancelled;
    {
      std::lock_guard lk{r->mtx};
      cancelled = r->cancelled;
    }
    if (cancelled)
      return r->end(make_error(errc::cancelled, "cancelled before routing"));
    spdlog::debug("request {}: {} of {} prompt tokens cached on a decode worker", r->original.request_id,
                  cached, r->original.token_ids.size());
    if (disagg::prefill_remotely(r->original.token_ids.size(), cached, threshold))
      r->start_prefill();
    else
      r->start_attempt();
  };
  caf::anon_send(router_->get(), peek_atom::value, std::move(peek));
  return r;
}

} // namespace dynamo::actors
