// Router-side ordering of each worker's KV events (research/dynamo.md 3.5):
// drops duplicates, holds events after a gap and asks for the missing range;
// the worker's replay (range or dump) releases them. Owned by the router
// actor next to its radix_index; not thread-safe.
#pragma once

#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/worker_key.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace dynamo::route {

enum class sequence_verdict : uint8_t {
  apply,     ///< in order: apply it now
  duplicate, ///< already applied (id <= last): drop it
  held,      ///< after a gap: kept until the replay arrives
};

struct sequence_step {
  sequence_verdict verdict = sequence_verdict::apply;
  std::optional<protocol::kv_resync_request> resync; ///< send this to the worker
};

/// What to do with a replay: optionally replace the worker's state with `dump`,
/// then apply `ready` in order; `resync` when a gap is still open.
struct recovery_step {
  bool replace = false;
  std::vector<protocol::kv_event> dump;
  std::vector<protocol::router_event> ready;
  std::optional<protocol::kv_resync_request> resync;
};

/// Tracks the last applied event_id per (worker, dp_rank). Event ids start at 0
/// per worker; a worker first seen at id > 0 is asked for [0, id-1] (its
/// buffer answers with a dump when that is older than its ring).
class event_sequencer {
public:
  /// `max_pending` bounds the events held per worker while a gap is open;
  /// past it they are dropped and a full dump is requested instead.
  explicit event_sequencer(size_t max_pending = 4096);

  [[nodiscard]] sequence_step on_event(const protocol::router_event& event);

  /// Feeds the worker's answer to a resync request.
  [[nodiscard]] recovery_step on_replay(const protocol::kv_replay& replay);

  /// A request for the worker's full state (used when it is discovered).
  [[nodiscard]] protocol::kv_resync_request request_dump(const worker_key& worker);

  /// Forgets a worker (all dp ranks of `worker_id`), e.g. on discovery expiry.
  void forget(uint64_t worker_id);

  [[nodiscard]] std::optional<uint64_t> last_event_id(const worker_key& worker) const;
  [[nodiscard]] bool awaiting(const worker_key& worker) const;
  [[nodiscard]] size_t pending(const worker_key& worker) const;

private:
  struct stream {
    std::optional<uint64_t> last;                 ///< last applied id
    bool awaiting = false;                        ///< a resync is outstanding
    std::vector<protocol::router_event> held;     ///< sorted by id, all > last
  };
  [[nodiscard]] static protocol::kv_resync_request make_request(const worker_key& w,
                                                                uint64_t from, uint64_t to);
  void hold(stream& s, const protocol::router_event& event);
  void drain(stream& s, const worker_key& w, recovery_step& out);

  size_t max_pending_;
  std::unordered_map<worker_key, stream> streams_;
};

} // namespace dynamo::route
