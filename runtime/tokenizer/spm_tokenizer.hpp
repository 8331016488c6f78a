// SentencePiece (GGUF tokenizer.ggml.model = "llama"): the tokenizer of
// Llama 2, Mistral v0.1 / Mixtral and Phi-3, as llama.cpp's SPM tokenizer
// runs it (score-driven merges, byte fallback, spaces escaped to U+2581).
// Built once from a vocabulary (gguf_tokenizer.hpp loads one from a GGUF
// file), then immutable: encode/decode are safe from any number of threads.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/tokenizer/tokenizer.hpp"
#include "runtime/tokenizer/vocab.hpp"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dynamo::tok {

/// Everything a SentencePiece model needs, as GGUF stores it.
struct spm_vocab : vocab_common {
  std::vector<float> scores;   ///< id -> merge priority (higher merges first); empty: all 0
  bool add_space_prefix = true; ///< a space before text that starts the input or follows a special token
};

class spm_tokenizer final : public tokenizer {
public:
  /// Validates `vocab` (ids in range, one score per token) and builds the
  /// lookup tables. Errors: errc::invalid_argument naming the problem.
  [[nodiscard]] static expected<std::shared_ptr<spm_tokenizer>> create(spm_vocab vocab);

  // tokenizer contract
  /// Characters no token covers become their byte tokens <0xXX> (or the
  /// unknown token when the vocabulary has no byte tokens).
  [[nodiscard]] std::vector<uint32_t> encode(std::string_view text, bool parse_special) const override;
  /// U+2581 reads back as a space; byte tokens give their byte.
  [[nodiscard]] std::string token_bytes(uint32_t id, bool include_special) const override;
  [[nodiscard]] uint32_t vocab_size() const noexcept override { return static_cast<uint32_t>(tokens_.size()); }
  [[nodiscard]] std::vector<uint32_t> stop_token_ids() const override { return special_.eog(); }
  [[nodiscard]] int64_t bos_token_id() const noexcept override;
  [[nodiscard]] int64_t appended_eos_id() const noexcept override;
  /// Token bytes without the space add_space_prefix put before the first token.
  [[nodiscard]] std::string decode(std::span<const uint32_t> ids, bool include_special = false) const override;

  [[nodiscard]] std::optional<uint32_t> token_id(std::string_view text) const;
  [[nodiscard]] const std::string& token_text(uint32_t id) const { return tokens_[id]; }
  [[nodiscard]] token_type type_of(uint32_t id) const noexcept { return special_.type_of(id); }
  [[nodiscard]] bool add_space_prefix() const noexcept { return add_space_prefix_; }
  [[nodiscard]] bool add_bos() const noexcept { return add_bos_; }

private:
  struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  // One symbol of the text being merged: a byte span, linked to live neighbours.
  struct symbol {
    uint32_t start;
    uint32_t n; ///< 0: merged into its left neighbour
    int32_t prev;
    int32_t next;
  };
  struct bigram {
    float score;
    int32_t left;
    int32_t right;
    uint32_t size;
  };

  spm_tokenizer() = default;
  void encode_text(std::string_view text, std::vector<uint32_t>& out) const;
  void try_bigram(std::string_view text, const std::vector<symbol>& syms, int32_t left, int32_t right,
                  std::vector<bigram>& queue) const;

  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<std::string> bytes_; ///< id -> the raw bytes it decodes to
  special_vocab special_;
  std::unordered_map<std::string, uint32_t, string_hash, std::equal_to<>> ids_;
  std::array<uint32_t, 256> byte_ids_{}; ///< <0xXX> (or the byte itself, or unknown); UINT32_MAX: dropped
  std::optional<uint32_t> bos_id_, eos_id_;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = true;
};

} // namespace dynamo::tok
