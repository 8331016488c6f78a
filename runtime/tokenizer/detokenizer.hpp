// Streaming detokenization: turns a stream of token ids into text pieces that
// never split a UTF-8 character, and holds back text that might still become a
// stop string. One instance per request; not thread-safe.
#pragma once

#include "runtime/tokenizer/tokenizer.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dynamo::tok {

/// Accumulates token bytes and releases only complete UTF-8 sequences.
/// Invalid bytes are released as U+FFFD so output is always valid UTF-8.
class incremental_detokenizer {
public:
  explicit incremental_detokenizer(const tokenizer& tk, bool include_special = false)
    : tk_(&tk), include_special_(include_special) {}

  /// Text completed by `id` (possibly empty).
  [[nodiscard]] std::string push(uint32_t id);

  /// Whatever is pending at end of stream (an incomplete tail becomes U+FFFD).
  [[nodiscard]] std::string flush();

private:
  const tokenizer* tk_;
  bool include_special_;
  std::string pending_;
};

/// Length of the longest prefix of `s` that is complete, valid UTF-8 when
/// followed by more bytes; bytes that can never be valid are replaced in place.
[[nodiscard]] size_t utf8_complete_prefix(std::string& s);

/// Watches generated text for stop strings (OpenAI `stop`). Text that could be
/// the start of a stop string is held back until it is decided.
class stop_matcher {
public:
  explicit stop_matcher(std::vector<std::string> stops);

  struct result {
    std::string text; ///< safe to emit now
    bool stopped = false;
  };

  /// Feeds new text; once stopped, further input is ignored.
  [[nodiscard]] result push(std::string_view text);

  /// Releases held-back text at end of stream (when no stop string matched).
  [[nodiscard]] std::string flush();

  [[nodiscard]] bool stopped() const noexcept { return stopped_; }

private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

} // namespace dynamo::tok
