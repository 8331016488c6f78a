// Predicted load per worker from the router's own decisions (research/dynamo.md
// 3.6-3.7): requests are booked at routing, leave the prefill load on their
// first token and are freed at stream end. Owned by the router; not thread-safe.
#pragma once

#include "runtime/route/worker_key.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dynamo::route {

/// Decode blocks are counted once per worker even when several active requests
/// share them (sequence hashes are chained, so a shared prefix has equal hashes).
class active_sequences {
public:
  /// Books `request_id` on `worker`. `seq_hashes` are the sequence hashes of
  /// the request's full blocks (a partial tail counts as one unshared block);
  /// `isl` its prompt tokens; `cached_tokens` what it need not compute
  /// there (the router's estimate); `track_prefill` books isl - cached_tokens
  /// as prefill load. False (and nothing booked) if the id is already active.
  [[nodiscard]] bool add_request(const std::string& request_id, const worker_key& worker,
                   std::span<const uint64_t> seq_hashes, uint32_t isl, uint64_t cached_tokens,
                   bool track_prefill = true);

  /// The first token came back: the prompt no longer weighs on prefill.
  [[nodiscard]] bool mark_prefill_completed(const std::string& request_id);

  /// The request ended (finished, failed or cancelled).
  [[nodiscard]] bool free(const std::string& request_id);

  /// Drops every request booked on any dp rank of `worker_id`; returns how many.
  [[nodiscard]] size_t remove_worker(uint64_t worker_id);

  [[nodiscard]] uint64_t active_prefill_tokens(const worker_key& worker) const;
  /// Distinct blocks held by the worker's active requests.
  [[nodiscard]] uint64_t active_decode_blocks(const worker_key& worker) const;
  [[nodiscard]] size_t active_requests(const worker_key& worker) const;
  [[nodiscard]] bool knows(const worker_key& worker) const;

  /// How many leading hashes of `seq_hashes` the worker's active requests
  /// already hold (those blocks would not add decode load).
  [[nodiscard]] uint32_t shared_prefix_blocks(const worker_key& worker,
                                              std::span<const uint64_t> seq_hashes) const;

  [[nodiscard]] size_t size() const noexcept { return requests_.size(); }
  [[nodiscard]] uint32_t block_size() const noexcept { return block_size_; }

  explicit active_sequences(uint32_t block_size);

private:
  struct request {
    worker_key worker;
    std::vector<uint64_t> seq_hashes;
    uint64_t prefill_tokens = 0; ///< booked while prefill is pending
    bool prefill_done = false;
  };
  struct worker_load {
    std::unordered_map<uint64_t, uint32_t> blocks; ///< seq hash -> active requests holding it
    uint64_t prefill_tokens = 0;
    size_t requests = 0;
  };

  void release(request& r);

  uint32_t block_size_;
  uint64_t tail_counter_ = 0;
  std::unordered_map<std::string, request> requests_;
  std::unordered_map<worker_key, worker_load> loads_;
};

} // namespace dynamo::route
