#include "actors/router/routed_client.hpp"

#include "actors/router/router_actor.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <mutex>

namespace dynamo::actors {

bool is_migratable(errc code) noexcept {
  return code == errc::disconnected || code == errc::device_error || code == errc::closed;
}

namespace {

// One request across all the workers it visits.
struct migrating_request : engine::generation, std::enable_shared_from_this<migrating_request> {
  caf::actor router;
  routed_client_config cfg;
  std::shared_ptr<routed_client_stats> stats;
  engine::chunk_callback on_chunk;

  std::mutex mtx;
  protocol::preprocessed_request original;
  std::vector<uint32_t> generated; ///< tokens delivered to the caller so far
  std::vector<uint64_t> failed;    ///< instances that failed this request
  uint64_t current = 0;            ///< instance serving the current attempt
  uint32_t migrations = 0;
  bool cancelled = false;
  bool done = false;
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

  void start_attempt(std::chrono::milliseconds delay = std::chrono::milliseconds{0}) {
    auto j = std::make_shared<route_job>();
    {
      std::lock_guard lk{mtx};
      j->request = original;
      j->request.token_ids.insert(j->request.token_ids.end(), generated.begin(), generated.end());
      j->request.stop.max_tokens -= static_cast<uint32_t>(generated.size());
      if (j->request.stop.min_tokens > generated.size())
        j->request.stop.min_tokens -= static_cast<uint32_t>(generated.size());
      else
        j->request.stop.min_tokens = 0;
      j->exclude = failed;
      job = j;
    }
    auto self = shared_from_this();
    j->callbacks.on_routed = [self](uint64_t id) {
      std::lock_guard lk{self->mtx};
      self->current = id;
    };
    j->callbacks.on_chunk = [self](protocol::engine_output chunk) { self->chunk(std::move(chunk)); };
    j->callbacks.on_end = [self](const caf::error& err) { self->end(err); };
    if (delay.count() > 0)
      caf::delayed_anon_send(router, delay, route_atom::value, j);
    else
      caf::anon_send(router, route_atom::value, j);
  }

  void chunk(protocol::engine_output c) {
    if (c.finish == protocol::finish_reason::error && is_migratable(static_cast<errc>(c.error_code))) {
      // Swallow it: end() sees the stream finish and retries.
      std::lock_guard lk{mtx};
      pending_error = make_error(static_cast<errc>(c.error_code), c.error);
      return;
    }
    {
      std::lock_guard lk{mtx};
      if (done)
        return;
      generated.insert(generated.end(), c.token_ids.begin(), c.token_ids.end());
      if (c.finish != protocol::finish_reason::none)
        done = true;
    }
    on_chunk(std::move(c));
  }

  void end(const caf::error& err) {
    caf::error failure = err;
    bool retry = false;
    {
      std::lock_guard lk{mtx};
      if (!failure && pending_error)
        failure = pending_error;
      pending_error = caf::error{};
      if (done)
        return;
      if (!failure) // cannot happen: the router turns a missing final chunk into an error
        failure = make_error(errc::internal, "stream ended without a final chunk");
      auto code = code_of(failure);
      size_t seq_len = original.token_ids.size() + generated.size();
      bool room = cfg.migration_max_seq_len == 0 || seq_len <= cfg.migration_max_seq_len;
      if (!cancelled && is_migratable(code) && migrations < cfg.migration_limit && room &&
          generated.size() < original.stop.max_tokens) {
        retry = true;
        ++migrations;
        if (current != 0)
          failed.push_back(current);
        (generated.empty() ? stats->migrations_new : stats->migrations_ongoing)++;
        spdlog::warn("request {}: {} on worker {:016x}; migrating with {} tokens generated ({}/{})",
                     original.request_id, describe(failure), current, generated.size(), migrations,
                     cfg.migration_limit);
      } else {
        done = true;
        if (is_migratable(code) && !cancelled)
          stats->migration_exhausted++;
      }
    }
    // Back off a little more on each attempt: a crashed worker restarts within
    // milliseconds, a killed process leaves discovery within its lease.
    if (retry)
      return start_attempt(std::chrono::milliseconds(10) * (1u << std::min(migrations, 6u)));
    on_chunk(std::move(failure));
  }

  caf::error pending_error;
};

} // namespace

routed_client::routed_client(caf::actor router, routed_client_config cfg)
  : router_(std::move(router)), cfg_(cfg), stats_(std::make_shared<routed_client_stats>()) {}

std::shared_ptr<engine::generation> routed_client::generate(protocol::preprocessed_request req,
                                                            engine::chunk_callback on_chunk) {
  auto r = std::make_shared<migrating_request>();
  r->router = router_;
  r->cfg = cfg_;
  r->stats = stats_;
  r->on_chunk = std::move(on_chunk);
  r->original = std::move(req);
  r->start_attempt();
  return r;
}

} // namespace dynamo::actors
