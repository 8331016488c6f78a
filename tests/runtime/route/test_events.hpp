// Builders of KV events for the route tests: blocks are named by small "local"
// hashes (the tokens_hash) and their external hash is the chained sequence
// hash of the whole prefix, as an engine using Dynamo's hashing would emit.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/kv/block_hash.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/worker_key.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <vector>

// Printers so that Boost.Test can show failing comparisons.
namespace dynamo {
inline std::ostream& operator<<(std::ostream& os, errc c) { return os << to_string(c); }
namespace route {
inline std::ostream& operator<<(std::ostream& os, const worker_key& w) {
  return os << to_string(w);
}
} // namespace route
} // namespace dynamo

namespace dynamo::route::test {

using hashes = std::vector<uint64_t>;

/// Collects the resync requests a kv_router or kv_indexer sends, from any thread.
class resync_inbox {
public:
  [[nodiscard]] std::function<void(protocol::kv_resync_request)> sink() {
    return [this](protocol::kv_resync_request r) {
      std::lock_guard lk{mtx_};
      asks_.push_back(std::move(r));
    };
  }
  [[nodiscard]] std::optional<protocol::kv_resync_request> take() {
    std::lock_guard lk{mtx_};
    if (asks_.empty())
      return std::nullopt;
    auto r = asks_.front();
    asks_.pop_front();
    return r;
  }

private:
  std::mutex mtx_;
  std::deque<protocol::kv_resync_request> asks_;
};

/// External (sequence) hash of the last block of `chain`.
inline uint64_t ext(const hashes& chain) { return kv::sequence_hashes(chain).back(); }

/// Stored event: `added` blocks under the prefix `prefix` (empty = root).
inline protocol::router_event store(uint64_t worker, const hashes& prefix, const hashes& added,
                                    uint32_t dp_rank = 0, uint64_t id = 0) {
  protocol::router_event ev;
  ev.worker_id = worker;
  ev.event.event_id = id;
  ev.event.dp_rank = dp_rank;
  ev.event.kind = protocol::kv_event_kind::stored;
  hashes chain = prefix;
  if (!prefix.empty())
    ev.event.parent_hash = ext(prefix);
  for (uint64_t h : added) {
    chain.push_back(h);
    ev.event.blocks.push_back({ext(chain), h});
  }
  return ev;
}

/// Removed event for the blocks `removed` that follow `prefix`.
inline protocol::router_event remove(uint64_t worker, const hashes& prefix,
                                     const hashes& removed, uint32_t dp_rank = 0,
                                     uint64_t id = 0) {
  protocol::router_event ev;
  ev.worker_id = worker;
  ev.event.event_id = id;
  ev.event.dp_rank = dp_rank;
  ev.event.kind = protocol::kv_event_kind::removed;
  hashes chain = prefix;
  for (uint64_t h : removed) {
    chain.push_back(h);
    ev.event.removed_hashes.push_back(ext(chain));
  }
  return ev;
}

inline protocol::router_event cleared(uint64_t worker, uint32_t dp_rank = 0, uint64_t id = 0) {
  protocol::router_event ev;
  ev.worker_id = worker;
  ev.event.event_id = id;
  ev.event.dp_rank = dp_rank;
  ev.event.kind = protocol::kv_event_kind::cleared;
  return ev;
}

inline protocol::router_event with_id(protocol::router_event ev, uint64_t id) {
  ev.event.event_id = id;
  return ev;
}

} // namespace dynamo::route::test
