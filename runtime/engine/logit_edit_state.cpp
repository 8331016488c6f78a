#include "runtime/engine/logit_edit_state.hpp"

#include <algorithm>
#include <cmath>

namespace dynamo::engine {

kernels::logit_penalties penalties_of(const protocol::sampling_options& o) noexcept {
  kernels::logit_penalties p;
  p.presence = std::isfinite(o.presence_penalty) ? o.presence_penalty : 0.0f;
  p.frequency = std::isfinite(o.frequency_penalty) ? o.frequency_penalty : 0.0f;
  p.repetition = std::isfinite(o.repetition_penalty) && o.repetition_penalty > 0.0f ? o.repetition_penalty : 1.0f;
  return p;
}

logit_edit_state::logit_edit_state(const protocol::sampling_options& o, std::span<const uint32_t> prompt,
                                   std::span<const uint32_t> output) {
  const kernels::logit_penalties p = penalties_of(o);
  track_prompt_ = p.repetition != 1.0f;
  track_output_ = track_prompt_ || p.presence != 0.0f || p.frequency != 0.0f;
  for (const protocol::token_bias& b : o.logit_bias)
    if (std::isfinite(b.bias) && b.bias != 0.0f)
      at(b.token).bias = b.bias;
  if (track_prompt_)
    for (uint32_t t : prompt)
      at(t).flags |= kernels::logit_seen;
  for (uint32_t t : output)
    on_output(t);
}

kernels::logit_edit& logit_edit_state::at(uint32_t token) {
  auto [it, inserted] = by_token_.try_emplace(token);
  if (inserted)
    it->second.token = token;
  return it->second;
}

void logit_edit_state::on_output(uint32_t token) {
  if (!track_output_)
    return;
  kernels::logit_edit& e = at(token);
  ++e.count;
  e.flags |= kernels::logit_seen;
}

std::vector<kernels::logit_edit> logit_edit_state::edits(std::span<const uint32_t> suppress) const {
  std::vector<kernels::logit_edit> out;
  if (by_token_.empty() && suppress.empty())
    return out;
  out.reserve(by_token_.size() + suppress.size());
  for (const auto& [token, e] : by_token_)
    out.push_back(e);
  if (suppress.empty())
    return out;
  // Merge the mask into the sorted list (suppress is short: the stop tokens).
  for (uint32_t t : suppress) {
    auto it = std::lower_bound(out.begin(), out.end(), t,
                               [](const kernels::logit_edit& e, uint32_t v) { return e.token < v; });
    if (it != out.end() && it->token == t)
      it->flags |= kernels::logit_suppressed;
    else
      out.insert(it, kernels::logit_edit{t, 0.0f, 0, kernels::logit_suppressed});
  }
  return out;
}

} // namespace dynamo::engine
