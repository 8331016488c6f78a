// Byte-level BPE pre-tokenizers: split text into the pieces BPE merges within,
// exactly as the regexes GGUF's `tokenizer.ggml.pre` names would, but written
// by hand (std::regex lacks \p{..}). Called by bpe_tokenizer::encode.
// Pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace dynamo::tok {

enum class pre_tokenizer {
  /// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
  /// SmolLM / StarCoder: every \p{N} is its own piece, then the GPT-2 pattern.
  smollm,
  /// Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  ///          ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  llama3,
  /// Qwen2: the Llama 3 pattern with \p{N} (single digits) instead of \p{N}{1,3}.
  qwen2,
};

/// The pre-tokenizer for a `tokenizer.ggml.pre` name ("smollm", "llama-bpe",
/// "gpt-2", ...), or nullopt when we do not implement it.
[[nodiscard]] std::optional<pre_tokenizer> pre_tokenizer_from_name(std::string_view name) noexcept;

/// Splits `text` into consecutive pieces (views into `text`) covering it
/// exactly. Invalid UTF-8 bytes are kept, each classed as punctuation.
[[nodiscard]] std::vector<std::string_view> pre_tokenize(pre_tokenizer kind, std::string_view text);

} // namespace dynamo::tok
