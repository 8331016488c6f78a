// Turns one choice's engine_output chunks into OpenAI text: incremental,
// UTF-8-safe detokenization, stop strings (text from a match on never leaves;
// the generation is then cancelled), the final finish_reason, and each
// token's logprobs with the token's bytes and text offset; and the echoed
// prompt of /v1/completions echo.
// Owned by one request (one actor); not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/openai/response.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/tokenizer/detokenizer.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dynamo::openai {

class text_stream {
public:
  /// `tk` must outlive this object. `stop_token_ids`: the ids that end
  /// generation (the request's stop_conditions): a chunk that ends the choice
  /// with `stop` on one of them contributes neither its text nor its
  /// logprobs (as vLLM). With `logprobs`, step::logprobs lists every token
  /// whose text is released (chunks must then carry engine_output::logprobs).
  /// `include_special`: control tokens give their text (for tool-call markers).
  text_stream(const tok::tokenizer& tk, std::vector<std::string> stop_strings,
              std::vector<uint32_t> stop_token_ids = {}, bool logprobs = false,
              bool include_special = false);

  struct step {
    std::string text;     ///< text released by this chunk (may be empty)
    uint32_t tokens = 0;  ///< tokens this chunk contributed (usage, metrics)
    bool done = false;    ///< the choice is complete
    protocol::finish_reason finish = protocol::finish_reason::none; ///< set when done
    bool cancel_backend = false; ///< a stop string ended it early: cancel the generation
    std::vector<logprob_entry> logprobs; ///< the tokens behind `text` (with `logprobs`)
  };

  /// The echoed prompt (/v1/completions echo), before the first chunk: a
  /// step with `text` (empty: the detokenized prompt) and, with logprobs, an
  /// entry per prompt token, the first without a logprob, token p with
  /// lps[p - 1]; offsets from the detokenized prompt. Later tokens' offsets
  /// count from the end of `text`. errc::internal when lps does not hold
  /// prompt.size() - 1 entries (with logprobs).
  [[nodiscard]] expected<step> echo(std::span<const uint32_t> prompt, std::string text,
                                    std::span<const protocol::token_logprob> lps);

  /// Feeds one chunk of this choice. A chunk whose choice_end() is not none
  /// completes the choice with that reason, unless a stop string matched
  /// first (then "stop"). After completion further chunks are ignored (an
  /// empty step).
  [[nodiscard]] step push(const protocol::engine_output& out);

  /// Ends the choice where it is (its output parser has all it takes): later
  /// chunks are ignored, and text held back is dropped.
  void end() noexcept { done_ = true; }

  [[nodiscard]] bool done() const noexcept { return done_; }
  [[nodiscard]] uint32_t completion_tokens() const noexcept { return tokens_; }
  /// Largest cached-prefix count any chunk reported.
  [[nodiscard]] uint32_t cached_tokens() const noexcept { return cached_; }

private:
  /// The logprob entry of token `i` of `out` (REQUIRES: out.logprobs[i]).
  [[nodiscard]] logprob_entry entry(const protocol::engine_output& out, size_t i) const;
  /// The entry of token `id` with logprobs `lp` at the current offset.
  [[nodiscard]] logprob_entry entry(uint32_t id, const protocol::token_logprob& lp) const;

  const tok::tokenizer* tk_;
  tok::incremental_detokenizer detok_;
  tok::stop_matcher stops_;
  std::vector<uint32_t> stop_token_ids_;
  bool logprobs_;
  bool include_special_;
  uint32_t tokens_ = 0;
  uint32_t cached_ = 0;
  uint32_t chars_ = 0; ///< code points the detokenizer has released
  bool done_ = false;
};

} // namespace dynamo::openai
