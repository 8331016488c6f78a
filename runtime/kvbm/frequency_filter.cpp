#include "runtime/kvbm/frequency_filter.hpp"

#include <iterator>
#include <limits>

namespace dynamo::kvbm {

bool frequency_filter::should_offload(uint64_t hash, time_point now) {
  if (!last_decay_) {
    last_decay_ = now;
  } else if (cfg_.decay_interval.count() > 0 && now - *last_decay_ >= cfg_.decay_interval) {
    const int64_t steps = (now - *last_decay_) / cfg_.decay_interval;
    decay(steps);
    *last_decay_ += steps * cfg_.decay_interval;
  }
  auto [it, inserted] = counts_.try_emplace(hash, 1);
  if (!inserted) // double, saturating
    it->second = it->second > std::numeric_limits<int64_t>::max() / 2 ? std::numeric_limits<int64_t>::max()
                                                                      : it->second * 2;
  const bool pass = it->second >= cfg_.min_frequency;
  while (counts_.size() > cfg_.max_entries)
    decay(1);
  return pass;
}

int64_t frequency_filter::count(uint64_t hash) const {
  auto it = counts_.find(hash);
  return it == counts_.end() ? 0 : it->second;
}

void frequency_filter::decay(int64_t steps) {
  for (auto it = counts_.begin(); it != counts_.end();) {
    it->second -= steps;
    it = it->second <= 0 ? counts_.erase(it) : std::next(it);
  }
}

} // namespace dynamo::kvbm
