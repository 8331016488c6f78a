#include "runtime/mocker/timing_model.hpp"

#include <algorithm>
#include <cmath>

namespace dynamo::mocker {

double prefill_ms(uint64_t new_tokens) noexcept {
  if (new_tokens == 0)
    return 0.0;
  const auto t = static_cast<double>(new_tokens);
  return 4.209989e-7 * t * t + 1.518344e-2 * t + 16.50142;
}

double decode_ms(double kv_usage) noexcept {
  const double u = std::clamp(kv_usage, 0.0, 1.0);
  return std::max(1.0, -25.74 * u * u + 54.01 * u + 5.74);
}

std::chrono::microseconds step_time(const engine::batch& b, const engine::kv_geometry& g,
                                    const timing_config& t) noexcept {
  if (t.speedup_ratio <= 0.0 || b.entries.empty())
    return std::chrono::microseconds{0};
  uint64_t prefill_tokens = 0;
  uint64_t kv_blocks = 0;
  bool samples = false;
  for (const engine::batch_entry& e : b.entries) {
    if (e.tokens.size() > 1 || !e.sample)
      prefill_tokens += e.tokens.size();
    kv_blocks += e.block_table.size();
    samples = samples || e.sample;
  }
  double ms = prefill_ms(prefill_tokens) / t.speedup_ratio;
  if (samples) {
    const double capacity = static_cast<double>(g.num_blocks);
    const double usage = capacity > 0 ? static_cast<double>(kv_blocks) / capacity : 1.0;
    const double decode_ratio = t.speedup_ratio * t.decode_speedup_ratio;
    ms += decode_ms(usage) / decode_ratio;
  }
  return std::chrono::microseconds{static_cast<int64_t>(std::llround(ms * 1000.0))};
}

} // namespace dynamo::mocker
