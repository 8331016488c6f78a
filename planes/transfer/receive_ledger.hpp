// Receiver-side bookkeeping shared by the tcp and ucx transports: which transfers
// are landing, how many blocks each has, when one is complete (its done frame seen and
// every block in), which ones were abandoned. Owned by one receiver; not thread-safe
// (the receiver's progress thread is its only user).
#pragma once

#include "planes/transfer/frame.hpp"
#include "planes/transfer/transfer_common.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace dynamo::planes::transfer_detail {

/// errc::malformed_message unless [block * stride, + length) is whole blocks inside
/// the region (several blocks only when they touch: stride == bytes_per_block).
/// Returns the number of blocks.
[[nodiscard]] expected<uint64_t> check_landing(const protocol::kv_region_geometry& geometry,
                                               uint64_t block, uint64_t length);

/// Where one landing run's bytes go: `offset` from the region's base, `bytes` long.
struct landing_span {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// The spans of a batched data message's runs (ucx): each run checked with
/// check_landing, and together they must be exactly `length` payload bytes.
/// `blocks` gets the number of blocks. errc::malformed_message otherwise.
[[nodiscard]] expected<std::vector<landing_span>> check_runs(const protocol::kv_region_geometry& geometry,
                                                             std::span<const landing_run> runs,
                                                             uint64_t length, uint64_t& blocks);

class receive_ledger {
public:
  using key = std::pair<uint64_t, uint64_t>; ///< (source worker, transfer id)

  explicit receive_ledger(std::chrono::milliseconds stale_after) : stale_after_(stale_after) {}

  /// True when `k` was abandoned or failed: its bytes must not land any more.
  [[nodiscard]] bool is_dead(const key& k) const;

  /// `blocks` blocks of `k` landed. A status when that completes it.
  [[nodiscard]] std::optional<protocol::kv_transfer_status> on_data(const key& k, uint64_t blocks,
                                                                    uint64_t bytes,
                                                                    clock::time_point now);

  /// The sender says `k` has `blocks` blocks (`bytes` bytes); `out_of_band`: they
  /// were written without data frames. A status when complete (or inconsistent).
  [[nodiscard]] std::optional<protocol::kv_transfer_status>
  on_done(const key& k, uint64_t blocks, uint64_t bytes, bool out_of_band, clock::time_point now);

  /// Marks `k` failed (a bad frame, a closed connection) and returns its status.
  [[nodiscard]] protocol::kv_transfer_status fail(const key& k, errc code, std::string message,
                                                  clock::time_point now);

  /// Transfers open longer than stale_after, abandoned now (errc::timeout).
  [[nodiscard]] std::vector<protocol::kv_transfer_status> expire(clock::time_point now);

  [[nodiscard]] size_t open_count() const noexcept { return open_.size(); }
  [[nodiscard]] bool is_open(const key& k) const { return open_.count(k) != 0; }
  /// Keys of open transfers (for failing those of a closed connection).
  [[nodiscard]] std::vector<key> open_keys() const;

private:
  struct entry {
    clock::time_point started;
    uint64_t blocks = 0;
    uint64_t bytes = 0;
    std::optional<uint64_t> declared_blocks;
    uint64_t declared_bytes = 0;
  };
  std::optional<protocol::kv_transfer_status> settle(const key& k, entry& e);
  void bury(const key& k);

  std::chrono::milliseconds stale_after_;
  std::map<key, entry> open_;
  std::set<key> dead_;
  std::deque<key> dead_order_; ///< bounded memory of dead keys
};

} // namespace dynamo::planes::transfer_detail
