// Turns one request's engine_output chunks into OpenAI text: incremental,
// UTF-8-safe detokenization, stop strings (text from a match on never leaves;
// the generation is then cancelled) and the final finish_reason.
// Owned by one request (one actor); not thread-safe.
#pragma once

#include "runtime/protocol/llm.hpp"
#include "runtime/tokenizer/detokenizer.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dynamo::openai {

class text_stream {
public:
  /// `tk` must outlive this object.
  text_stream(const tok::tokenizer& tk, std::vector<std::string> stop_strings);

  struct step {
    std::string text;     ///< text released by this chunk (may be empty)
    uint32_t tokens = 0;  ///< tokens this chunk contributed (usage, metrics)
    bool done = false;    ///< the response is complete
    protocol::finish_reason finish = protocol::finish_reason::none; ///< set when done
    bool cancel_backend = false; ///< a stop string ended it early: cancel the generation
  };

  /// Feeds one chunk. A chunk with finish != none completes the response with
  /// that reason, unless a stop string matched first (then "stop"). After
  /// completion further chunks are ignored (an empty step).
  [[nodiscard]] step push(const protocol::engine_output& out);

  [[nodiscard]] bool done() const noexcept { return done_; }
  [[nodiscard]] uint32_t completion_tokens() const noexcept { return tokens_; }
  /// Largest cached-prefix count any chunk reported.
  [[nodiscard]] uint32_t cached_tokens() const noexcept { return cached_; }

private:
  tok::incremental_detokenizer detok_;
  tok::stop_matcher stops_;
  uint32_t tokens_ = 0;
  uint32_t cached_ = 0;
  bool done_ = false;
};

} // namespace dynamo::openai
