// The tokenizer contract every model family implements (byte-level BPE from
// GGUF metadata, or the byte tokenizer the mocker uses). Implementations are
// immutable after construction: safe to share across threads.
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

  /// Concatenated bytes of `ids` (special tokens skipped unless `include_special`).
  [[nodiscard]] std::string decode(std::span<const uint32_t> ids, bool include_special = false) const;
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
