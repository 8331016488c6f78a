// The G2 -> G3 admission rule of the KV block manager, as Dynamo's
// FrequencyFilter (lib/llm/src/block_manager/offload/filter.rs): each time a
// block is offered for disk its count starts at 1 or doubles; it goes to disk
// once the count reaches the minimum (2: a block seen twice). Every decay
// interval each count drops by 1 (0 forgets it); past max_entries the counts
// decay until the map fits. Time is passed in (tests inject it). Owned by
// kvbm_connector on the engine's step thread: not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace dynamo::kvbm {

struct frequency_filter_config {
  int64_t min_frequency = 2;                    ///< Dynamo's min_offload_frequency
  std::chrono::milliseconds decay_interval{600000}; ///< 600 s
  size_t max_entries = 1000000;
};

class frequency_filter {
public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit frequency_filter(frequency_filter_config cfg = {}) : cfg_(cfg) {}

  /// Counts one offer of `hash` at `now` (applying the decay steps elapsed
  /// since the last one) and says whether it may go to disk.
  [[nodiscard]] bool should_offload(uint64_t hash, time_point now);

  /// The count of `hash` (0 when not tracked), without decaying.
  [[nodiscard]] int64_t count(uint64_t hash) const;
  [[nodiscard]] size_t size() const noexcept { return counts_.size(); }

private:
  /// Every count drops by `steps`; counts reaching 0 are forgotten.
  void decay(int64_t steps);

  frequency_filter_config cfg_;
  std::unordered_map<uint64_t, int64_t> counts_;
  std::optional<time_point> last_decay_;
};

} // namespace dynamo::kvbm
