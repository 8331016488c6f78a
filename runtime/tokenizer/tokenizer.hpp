// The tokenizer contract every model family implements (byte-level BPE and
// SentencePiece from GGUF metadata, or the byte tokenizer the mocker uses).
// Implementations are immutable after construction: safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::tok {

class tokenizer {
public:
  virtual ~tokenizer() = default;

  /// Token ids of `text`. With `parse_special`, special/control token texts
  /// (e.g. "<|im_start|>") map to their ids; otherwise they are encoded as text.
  [[nodiscard]] virtual std::vector<uint32_t> encode(std::string_view text,
                                                     bool parse_special) const = 0;

  /// The raw bytes one token stands for (may be a partial UTF-8 sequence).
  /// Control tokens give their text when `include_special`, else "".
  [[nodiscard]] virtual std::string token_bytes(uint32_t id, bool include_special) const = 0;

  [[nodiscard]] virtual uint32_t vocab_size() const noexcept = 0;

  /// Ids that end generation (EOS, EOT, EOG): the engine stops on any.
  [[nodiscard]] virtual std::vector<uint32_t> stop_token_ids() const = 0;

  /// BOS id, or -1 when the model has none / does not add one.
  [[nodiscard]] virtual int64_t bos_token_id() const noexcept = 0;

  /// EOS id when the model appends one to prompts (tokenizer.ggml.add_eos_token), else -1.
  [[nodiscard]] virtual int64_t appended_eos_id() const noexcept { return -1; }

  /// The text of `ids` (special tokens skipped unless `include_special`), as
  /// llama.cpp detokenizes: the bytes of each token, then what the model
  /// asks for (SentencePiece drops the space it prefixed; some BPE models clean
  /// " ," and similar). token_bytes() is the raw per-token form for streaming.
  [[nodiscard]] virtual std::string decode(std::span<const uint32_t> ids, bool include_special = false) const;

  /// encode() with the model's own additions, as llama.cpp's tokenize with
  /// add_special: BOS first when the model adds one (not twice when the text
  /// already starts with it, e.g. a template that writes it), EOS last when
  /// the model appends one.
  [[nodiscard]] std::vector<uint32_t> encode_prompt(std::string_view text, bool parse_special) const;
};

/// The mocker's tokenizer: one token per byte (ids 0..255), id 256 = EOS.
/// Text round-trips exactly.
class byte_tokenizer final : public tokenizer {
public:
  static constexpr uint32_t eos_id = 256;
  [[nodiscard]] std::vector<uint32_t> encode(std::string_view text, bool parse_special) const override;
  [[nodiscard]] std::string token_bytes(uint32_t id, bool include_special) const override;
  [[nodiscard]] uint32_t vocab_size() const noexcept override { return 257; }
  [[nodiscard]] std::vector<uint32_t> stop_token_ids() const override { return {eos_id}; }
  [[nodiscard]] int64_t bos_token_id() const noexcept override { return -1; }
};

} // namespace dynamo::tok
