// What the BPE and SentencePiece tokenizers share: the GGUF vocabulary fields
// (tokens, types, special ids, add_bos/add_eos) and what llama.cpp derives
// from them (token attributes, whole-token matching of special tokens, the
// end-of-generation set). Built once per tokenizer, then immutable: safe to
// read from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dynamo::tok {

/// GGUF tokenizer.ggml.token_type values.
enum class token_type : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,      ///< special tokens such as <|im_start|>: matched whole only with parse_special
  user_defined = 4, ///< added tokens: always matched whole, decoded as plain text
  unused = 5,
  byte = 6,         ///< SentencePiece byte fallback <0xXX>
};

/// Token ids GGUF names (tokenizer.ggml.*_token_id); absent when not named.
struct special_token_ids {
  std::optional<uint32_t> bos, eos, eot, eom, unk;
  std::optional<uint32_t> fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
};

/// The vocabulary fields every tokenizer model has.
struct vocab_common {
  std::vector<std::string> tokens;  ///< id -> text as stored
  std::vector<int32_t> token_types; ///< id -> token_type; empty means all normal
  special_token_ids ids;
  bool add_bos = false; ///< prepend BOS to prompts (tokenizer.ggml.add_bos_token)
  bool add_eos = false; ///< append EOS to prompts (tokenizer.ggml.add_eos_token)
  /// Phi-3 (llama.cpp keys on general.name): whitespace right after a special
  /// token is dropped when the token is matched in text (its RSTRIP attribute).
  bool rstrip_specials = false;
};

/// Token attributes as llama.cpp keeps them (a token can be several: a
/// user-defined token named like an end-of-turn token is also control).
struct token_attr {
  static constexpr uint8_t normal = 1, unknown = 2, control = 4, user_defined = 8, unused = 16, byte = 32,
                           lstrip = 64, rstrip = 128;
};

/// The special-token side of a vocabulary, derived as llama.cpp's loader does.
class special_vocab {
public:
  /// A piece of text to encode, or a whole special token.
  struct fragment {
    std::string_view text; ///< raw text (when !is_token)
    uint32_t id = 0;       ///< the token (when is_token)
    bool is_token = false;
  };

  /// Validates ids and types (errc::invalid_argument naming the problem) and
  /// derives attributes and the EOG set from `v`.
  [[nodiscard]] static expected<special_vocab> build(const vocab_common& v);

  [[nodiscard]] uint8_t attr(uint32_t id) const noexcept { return id < attrs_.size() ? attrs_[id] : 0; }
  [[nodiscard]] token_type type_of(uint32_t id) const noexcept;
  /// EOG ids, sorted (EOS, EOT, EOM, end-of-turn texts, FIM pad/repo/sep).
  [[nodiscard]] const std::vector<uint32_t>& eog() const noexcept { return eog_; }

  /// Splits `text` at special tokens, longest tokens first, as llama.cpp's
  /// tokenizer_st_partition: control and unknown tokens only with
  /// `parse_special`, user-defined tokens always.
  void partition(std::string_view text, bool parse_special, std::vector<fragment>& out) const;

private:
  struct special {
    std::string text;
    uint32_t id;
  };
  struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  void adjust_by_text(const vocab_common& v, special_token_ids& ids);

  std::vector<token_type> types_;
  std::vector<uint8_t> attrs_;
  std::vector<special> specials_; ///< control, user-defined and unknown tokens, longest first
  std::vector<uint32_t> eog_;
  // Which specials occur in a text is found in one pass: at bytes that start
  // some special, each special length is looked up.
  std::array<bool, 256> first_byte_{};
  std::vector<size_t> lengths_;                              ///< distinct special lengths
  std::unordered_map<std::string, size_t, string_hash, std::equal_to<>> by_text_; ///< text -> index in specials_
};

} // namespace dynamo::tok
