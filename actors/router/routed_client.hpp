// The frontend's llm_client for a model served by remote workers: each
// generate() becomes a route job for the router actor. Request migration lives
// here (Dynamo's Migration operator): when a worker dies mid-stream (the
// request plane reports disconnected, or the worker answers with a migratable
// error), the request is re-routed to another worker with prompt + tokens
// generated so far and max_tokens reduced, up to `migration_limit` times, so
// the caller sees one uninterrupted stream. A request with n > 1 choices is
// one routed request on one worker: retried while no choice has a token, not
// migrated after (its choices diverged), and never sent to a prefill worker
// (served aggregated). Thread-safe.
#pragma once

#include "actors/core/actor_handle.hpp"
#include "runtime/engine/llm_client.hpp"

#include <caf/actor.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <memory>
#include <mutex>

namespace dynamo::actors {

struct routed_client_stats {
  std::atomic<uint64_t> migrations_new{0};      ///< re-routed before any token arrived
  std::atomic<uint64_t> retries{0};             ///< attempts that failed before their first token
  std::atomic<uint64_t> migrations_ongoing{0};  ///< re-routed mid-stream
  std::atomic<uint64_t> migration_exhausted{0}; ///< failed after the limit
  std::atomic<uint64_t> disagg_requests{0};     ///< prefilled remotely, then decoded with that KV
  std::atomic<uint64_t> disagg_fallbacks{0};    ///< remote prefill or KV hand-off failed: prefilled locally
};

struct routed_client_config {
  /// Re-routes of a request whose worker failed *after* sending it tokens
  /// (Dynamo's --migration-limit; its default 0 is off).
  uint32_t migration_limit = 3;
  uint32_t migration_max_seq_len = 0;   ///< 0: unlimited; else no migration past this length
  /// Attempts that fail before their worker sent a token (it was already dead,
  /// or unreachable) are retried with backoff for this long, without using up
  /// the migration limit: a cluster whose workers all restart keeps its requests.
  std::chrono::milliseconds retry_window{10'000};
  /// Called for every re-route (ongoing: tokens had been delivered already).
  std::function<void(const std::string& model, bool ongoing)> on_migration;
  /// Called once per prefill-first request: remote (the decode worker's first
  /// chunk came from the prefill worker's KV) or false when the decode worker
  /// prefilled (the remote prefill failed, its result was refused, the KV
  /// transfer failed, or the decode worker died before answering). Not called
  /// for a request that ends (cancelled, failed) before either is known.
  std::function<void(const std::string& model, bool remote)> on_disagg;
  /// Disaggregation: prompts of at least this many tokens are prefilled on a
  /// prefill worker (when the model has any) and decoded elsewhere; shorter
  /// ones are prefilled locally by the decode worker (conditional disagg).
  uint32_t max_local_prefill_length = 512;
};

/// The prefill side of a disaggregated model: its router and how many prefill
/// instances it has (updated by the model watcher). Thread-safe.
struct prefill_pool {
  std::shared_ptr<actor_handle> router;
  caf::actor supervisor;
  std::atomic<int> instances{0};
};

class routed_client final : public engine::llm_client {
public:
  /// Routes through whatever actor `router` names at each attempt (a
  /// supervised router's current incarnation).
  routed_client(std::shared_ptr<actor_handle> router, routed_client_config cfg = {});
  /// Routes through one fixed router actor.
  routed_client(caf::actor router, routed_client_config cfg = {});

  [[nodiscard]] std::shared_ptr<engine::generation> generate(protocol::preprocessed_request req,
                                                             engine::chunk_callback on_chunk) override;

  [[nodiscard]] const routed_client_stats& stats() const noexcept { return *stats_; }

  /// Enables the prefill-first flow through `pool` (may be called any time).
  void set_prefill_pool(std::shared_ptr<prefill_pool> pool);

private:
  std::shared_ptr<prefill_pool> prefill() const;

  std::shared_ptr<actor_handle> router_;
  mutable std::mutex mtx_;
  std::shared_ptr<prefill_pool> prefill_;
  routed_client_config cfg_;
  std::shared_ptr<routed_client_stats> stats_;
};

/// True for failures another worker can recover from.
[[nodiscard]] bool is_migratable(errc code) noexcept;

} // namespace dynamo::actors
