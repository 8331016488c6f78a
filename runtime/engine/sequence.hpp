// One request as the scheduler tracks it: its tokens (prompt, then output),
// how many have KV computed, its stop rules and reporting flags. Owned by the
// scheduler; touched only from the engine's step thread.
#pragma once

#include "runtime/engine/logit_edit_state.hpp"
#include "runtime/grammar/matcher.hpp"
#include "runtime/kv/token_blocks.hpp"
#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::engine {

struct sequence {
  uint64_t id = 0;           ///< batch_entry::seq_id; unique for the scheduler's life
  std::string request_id;
  kv::token_blocks tokens;   ///< prompt (as received) followed by the tokens generated here
  uint32_t num_prompt = 0;   ///< tokens received with the request
  uint32_t num_computed = 0; ///< leading tokens whose KV is in the cache
  uint32_t num_output = 0;   ///< tokens generated here
  protocol::sampling_options sampling;
  protocol::stop_conditions stop;
  bool embed = false; ///< an embedding request: its last prompt chunk answers, nothing is sampled
  uint32_t cached_tokens = 0;     ///< prefix-cache hit at first admission
  bool admitted_before = false;   ///< has run at least once (cached_tokens is final)
  bool first_chunk_sent = false;  ///< cached_tokens has been reported
  uint64_t scheduled_step = 0;    ///< last step that scheduled it (0 = never)
  /// The connector loads its prompt's KV (a disaggregated decode): set when it
  /// is queued, cleared when the load ends (its prompt is not computed here).
  bool loads_prompt = false;
  /// WAITING_FOR_KV: blocks cover the prompt, the connector's load is under
  /// way, the scheduler never schedules it.
  bool waiting_for_kv = false;
  /// While waiting for KV: the tokens whose KV is computed once the load lands.
  uint32_t load_target = 0;
  /// Which of the request's choices this is (n > 1): choice 0 computes the
  /// prompt; the others are forked from it at the prompt's last step.
  uint32_t choice = 0;
  /// Choice 0 of an n > 1 request: n - 1 until the fork, then 0.
  uint32_t pending_forks = 0;
  logit_edit_state edits; ///< penalties and logit_bias over its tokens
  /// Guided decoding: the grammar state after the tokens generated so far
  /// (a fork copies its parent's); the mask of each sample comes from it.
  std::optional<gram::matcher> guide;
  /// sampling.prompt_logprobs: the logprobs of prompt tokens 1 .. size()
  /// gathered so far (over prefill chunks); sent with the first chunk.
  std::vector<protocol::token_logprob> prompt_logprobs;

  /// Prompt logprobs still to gather: the prompt is computed without the prefix cache.
  [[nodiscard]] bool gathers_prompt_logprobs() const noexcept {
    return sampling.prompt_logprobs && !first_chunk_sent && prompt_logprobs.size() + 1 < num_prompt;
  }

  /// Tokens still to compute; 1 for a decode, more for a (re)prefill.
  [[nodiscard]] uint32_t remaining() const noexcept { return tokens.size() - num_computed; }
};

} // namespace dynamo::engine
