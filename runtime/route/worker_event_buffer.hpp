// Worker-side memory of its own KV events (Dynamo's local indexer,
// research/dynamo.md 3.4-3.5): the last N events for range queries, and its own
// radix_index for a full dump when the range is older. One per (worker,
// dp_rank) event stream, owned by the worker's publisher; not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/radix_index.hpp"
#include "runtime/route/worker_key.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace dynamo::route {

inline constexpr size_t worker_event_buffer_size = 1024; // WORKER_KV_INDEXER_BUFFER_SIZE

class worker_event_buffer {
public:
  explicit worker_event_buffer(worker_key self, size_t capacity = worker_event_buffer_size);

  /// Records the next published event. Ids must be consecutive (the first may
  /// be any id); anything else is errc::invalid_argument and is not recorded.
  [[nodiscard]] expected<void> record(const protocol::kv_event& event);

  /// Events [from_id, to_id] (inclusive, clipped to what was recorded) when the
  /// ring still has from_id; otherwise a full dump.
  [[nodiscard]] protocol::kv_replay query(uint64_t from_id, uint64_t to_id) const;
  [[nodiscard]] protocol::kv_replay query(const protocol::kv_resync_request& req) const;

  /// Stored events rebuilding every block the worker holds now.
  [[nodiscard]] protocol::kv_replay dump() const;

  [[nodiscard]] std::optional<uint64_t> last_event_id() const noexcept;
  [[nodiscard]] std::optional<uint64_t> oldest_buffered_id() const noexcept;
  [[nodiscard]] size_t buffered() const noexcept { return count_; }
  [[nodiscard]] const radix_index& blocks() const noexcept { return blocks_; }

private:
  [[nodiscard]] const protocol::kv_event& at(size_t i) const; ///< i-th oldest buffered

  worker_key self_;
  std::vector<protocol::kv_event> ring_;
  size_t head_ = 0;  ///< slot of the oldest event
  size_t count_ = 0;
  std::optional<uint64_t> last_;
  radix_index blocks_;
};

} // namespace dynamo::route
