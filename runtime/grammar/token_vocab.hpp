// The per-vocabulary structure the matcher walks: every token's bytes, the
// tokens sorted by bytes with their common-prefix lengths (a flattened trie),
// and the end-of-sequence set. Built once per model (by the worker setup or
// the API layer) and shared read-only by all grammars and threads.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::gram {

class token_vocab {
public:
  /// `tokens[id]` is the byte string of token `id`; an empty string marks a
  /// special/control token that grammar matching never allows. `eos` are the
  /// ids allowed exactly when the grammar can end (each < tokens.size()).
  /// Errors: errc::invalid_argument for an out-of-range EOS id or no tokens.
  [[nodiscard]] static expected<std::shared_ptr<const token_vocab>> build(std::vector<std::string> tokens,
                                                                           std::vector<uint32_t> eos);

  /// From a model tokenizer: token_bytes(id, false) per id (control tokens are
  /// empty, so never allowed) and stop_token_ids() as the EOS set.
  [[nodiscard]] static expected<std::shared_ptr<const token_vocab>> from_tokenizer(const tok::tokenizer& t);

  [[nodiscard]] uint32_t size() const noexcept { return static_cast<uint32_t>(tokens_.size()); }
  /// 64-bit words of a mask over this vocabulary.
  [[nodiscard]] size_t mask_words() const noexcept { return (tokens_.size() + 63) / 64; }
  [[nodiscard]] std::string_view bytes(uint32_t id) const noexcept { return tokens_[id]; }
  [[nodiscard]] const std::vector<uint32_t>& eos() const noexcept { return eos_; }
  [[nodiscard]] bool is_eos(uint32_t id) const noexcept { return is_eos_[id] != 0; }

  /// Non-empty, non-EOS tokens sorted by bytes; lcp(i) is the common prefix
  /// length of sorted(i) and sorted(i - 1) (0 for i == 0).
  [[nodiscard]] uint32_t sorted_count() const noexcept { return static_cast<uint32_t>(sorted_.size()); }
  [[nodiscard]] uint32_t sorted(uint32_t i) const noexcept { return sorted_[i]; }
  [[nodiscard]] uint32_t lcp(uint32_t i) const noexcept { return lcp_[i]; }
  /// The bytes of sorted(i), from one blob in sorted order (walks read it
  /// sequentially instead of chasing each token's string).
  /// The longest token, in bytes.
  [[nodiscard]] uint32_t max_token_bytes() const noexcept { return max_bytes_; }
  [[nodiscard]] std::string_view sorted_bytes(uint32_t i) const noexcept {
    return {blob_.data() + offset_[i], offset_[i + 1] - offset_[i]};
  }

private:
  std::vector<std::string> tokens_;
  std::vector<uint32_t> eos_;
  std::vector<uint8_t> is_eos_;
  std::vector<uint32_t> sorted_;
  std::vector<uint32_t> lcp_;
  std::string blob_;
  uint32_t max_bytes_ = 0;
  std::vector<uint32_t> offset_;
};

} // namespace dynamo::gram
