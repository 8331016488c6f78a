// Byte-level BPE (GGUF tokenizer.ggml.model = "gpt2"): the tokenizer of
// SmolLM2, Llama 3, Qwen2/3, Mistral Nemo (tekken) and GPT-2-style models. Built once from a vocabulary
// (see gguf_tokenizer.hpp for loading one from a GGUF file), then immutable:
// encode/decode are safe to call from any number of threads.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/tokenizer/pre_tokenizer.hpp"
#include "runtime/tokenizer/tokenizer.hpp"
#include "runtime/tokenizer/vocab.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dynamo::tok {

/// Everything a byte-level BPE model needs, as GGUF stores it (plus the
/// flags llama.cpp ties to its pre-tokenizer name, see pre_tokenizer_info).
struct bpe_vocab : vocab_common {
  std::vector<std::string> merges; ///< "left right", highest priority first
  pre_tokenizer pre = pre_tokenizer::gpt2;
  bool ignore_merges = false; ///< a piece that is a whole token skips merging (Llama 3)
  bool clean_spaces = false;  ///< decode() cleans " ," / " 's" ... (clean_up_tokenization_spaces)
};

class bpe_tokenizer final : public tokenizer {
public:
  /// Validates `vocab` (ids in range, merges of known tokens) and builds the
  /// lookup tables. Errors: errc::invalid_argument naming the problem.
  [[nodiscard]] static expected<std::shared_ptr<bpe_tokenizer>> create(bpe_vocab vocab);

  // tokenizer contract
  /// Bytes whose single-byte token is missing from the vocabulary (and that
  /// no merge covers) are dropped, as HF tokenizers does.
  [[nodiscard]] std::vector<uint32_t> encode(std::string_view text, bool parse_special) const override;
  [[nodiscard]] std::string token_bytes(uint32_t id, bool include_special) const override;
  [[nodiscard]] uint32_t vocab_size() const noexcept override { return static_cast<uint32_t>(tokens_.size()); }
  /// EOG ids, sorted: EOS, EOT, EOM, tokens whose text ends turns or text
  /// (<|endoftext|>, <|im_end|>, <|eot_id|>, ...) and FIM pad/repo/sep tokens,
  /// as llama.cpp counts them (SmolLM2: {0, 2, 4}).
  [[nodiscard]] std::vector<uint32_t> stop_token_ids() const override { return special_.eog(); }
  /// BOS when the model asks for it (add_bos), else -1. Templates such as
  /// Llama 3's already write the BOS text; encoding that prompt with
  /// parse_special yields the BOS id, so do not prepend a second one.
  [[nodiscard]] int64_t bos_token_id() const noexcept override;
  [[nodiscard]] int64_t appended_eos_id() const noexcept override;
  /// Token bytes, then llama.cpp's clean-up of spaces when the model asks for it.
  [[nodiscard]] std::string decode(std::span<const uint32_t> ids, bool include_special = false) const override;

  /// Exact vocabulary lookup of a token's stored text.
  [[nodiscard]] std::optional<uint32_t> token_id(std::string_view text) const;
  /// The token's text as stored (REQUIRES: id < vocab_size()).
  [[nodiscard]] const std::string& token_text(uint32_t id) const { return tokens_[id]; }
  [[nodiscard]] token_type type_of(uint32_t id) const noexcept { return special_.type_of(id); }
  [[nodiscard]] bool is_eog(uint32_t id) const noexcept;
  [[nodiscard]] std::optional<uint32_t> bos_id() const noexcept { return bos_id_; }
  [[nodiscard]] std::optional<uint32_t> eos_id() const noexcept { return eos_id_; }
  [[nodiscard]] bool add_bos() const noexcept { return add_bos_; }
  [[nodiscard]] bool add_eos() const noexcept { return add_eos_; }
  [[nodiscard]] pre_tokenizer pre() const noexcept { return pre_; }

private:
  struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  struct merge_info {
    uint32_t rank;
    uint32_t id; ///< the merged token
  };
  // One symbol of a piece being merged: a token over a byte span, linked to
  // its live neighbours.
  struct merge_symbol {
    uint32_t id;
    uint32_t prev;
    uint32_t next;
    bool alive;
  };
  // A candidate merge of `left` and `left.next`, valid while both still carry
  // the ids it was made from. Lowest rank first, then leftmost (as HF does).
  struct merge_candidate {
    uint32_t rank;
    uint32_t left;
    uint32_t right;
    uint32_t left_id;
    uint32_t right_id;
    uint32_t merged_id;
    bool operator>(const merge_candidate& o) const noexcept {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  // Buffers reused across the pieces of one encode() call.
  struct merge_scratch {
    std::vector<merge_symbol> symbols;
    std::vector<merge_candidate> queue;
  };

  bpe_tokenizer() = default;
  [[nodiscard]] expected<void> build_merges(const std::vector<std::string>& merges);
  void encode_text(std::string_view text, merge_scratch& scratch, std::vector<uint32_t>& out) const;
  void encode_piece(std::string_view piece, merge_scratch& scratch, std::vector<uint32_t>& out) const;

  std::vector<std::string> tokens_;
  special_vocab special_;
  std::vector<std::string> bytes_; ///< id -> the raw bytes it decodes to
  std::unordered_map<std::string, uint32_t, string_hash, std::equal_to<>> ids_;
  std::unordered_map<uint64_t, merge_info> merges_; ///< (left << 32 | right) -> merge
  std::array<uint32_t, 256> byte_ids_{};            ///< token of each single byte (UINT32_MAX: none, dropped)
  pre_tokenizer pre_ = pre_tokenizer::gpt2;
  std::optional<uint32_t> bos_id_, eos_id_;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool ignore_merges_ = false; ///< Llama 3: a piece that is a whole token skips merging
  bool clean_spaces_ = false;
};

/// GPT-2's reversible byte -> code point map (printable bytes map to
/// themselves; the rest to U+0100 and up), and its inverse (-1: not a byte).
[[nodiscard]] char32_t byte_to_codepoint(uint8_t b) noexcept;
[[nodiscard]] int codepoint_to_byte(char32_t cp) noexcept;

} // namespace dynamo::tok
