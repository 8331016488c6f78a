// One sequence's share of logits processing: the tokens that logit_bias,
// the repetition / frequency / presence penalties and the min_tokens mask
// touch, kept up to date as tokens are generated, turned into the sorted
// kernels::logit_edit list of each batch_entry. Owned by a sequence in the
// scheduler; touched only from the engine's step thread.
#pragma once

#include "kernels/logit_edit.hpp"
#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace dynamo::engine {

class logit_edit_state {
public:
  logit_edit_state() = default;
  /// `prompt`: the original prompt; `output`: tokens generated before this
  /// worker got the request (after a migration), counted as generated.
  logit_edit_state(const protocol::sampling_options& o, std::span<const uint32_t> prompt,
                   std::span<const uint32_t> output);

  /// Records a generated token.
  void on_output(uint32_t token);

  /// The edits for the next sample, with `suppress` (stop tokens before
  /// min_tokens; may be empty) masked out. Empty when nothing applies.
  [[nodiscard]] std::vector<kernels::logit_edit> edits(std::span<const uint32_t> suppress) const;

  /// Whether penalties or logit_bias apply at all (else edits() is just the mask).
  [[nodiscard]] bool active() const noexcept { return track_prompt_ || track_output_ || !by_token_.empty(); }

private:
  kernels::logit_edit& at(uint32_t token);

  bool track_prompt_ = false; ///< repetition_penalty != 1: prompt tokens are `seen`
  bool track_output_ = false; ///< any penalty: generated tokens are counted and `seen`
  std::map<uint32_t, kernels::logit_edit> by_token_;
};

/// The row's penalties as the kernel takes them (neutral values when not finite).
[[nodiscard]] kernels::logit_penalties penalties_of(const protocol::sampling_options& o) noexcept;

} // namespace dynamo::engine
