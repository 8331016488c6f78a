// Byte-level BPE pre-tokenizers: split text into the pieces BPE merges within,
// exactly as the regex sequence llama.cpp keys on `tokenizer.ggml.pre` would,
// but written by hand (std::regex lacks \p{..}). Called by bpe_tokenizer::encode.
// Pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::tok {

/// One pre-tokenizer per distinct regex sequence of llama.cpp's
/// llm_tokenizer_bpe (src/llama-vocab.cpp). Where llama.cpp approximates a
/// tokenizer.json regex (tekken, gpt4o: \p{Lu}.. and \p{M}), the original
/// regex is implemented.
enum class pre_tokenizer {
  /// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
  /// SmolLM / StarCoder / Refact / Command-R: every \p{N} is its own piece, then GPT-2.
  smollm,
  /// Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  ///          ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  llama3,
  /// Qwen2: the Llama 3 pattern with \p{N} (single digits) instead of \p{N}{1,3}.
  qwen2,
  /// Qwen3.5: Qwen2 with [\p{L}\p{M}]+ words.
  qwen35,
  /// llama.cpp's BPE default: [\p{P}$+<=>^~|]+, GPT-2, \p{N}+, [0-9][0-9][0-9] in sequence.
  default_bpe,
  /// Falcon: [\p{P}$+<=>^~|`]+, GPT-2, [0-9][0-9][0-9].
  falcon,
  /// DeepSeek LLM: [\r\n], \s?[Latin/Greek/Cyrillic letters]+, \s?[ASCII/CJK punctuation]+,
  /// \s+$, [CJK]+, \p{N}+.
  deepseek_llm,
  /// DeepSeek Coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [CJK]+, \p{N}.
  deepseek_coder,
  /// DeepSeek V3: \p{N}{1,3}, [CJK/kana]+, then punctuation-led ASCII words, [\p{L}\p{M}]+ words, ...
  deepseek3,
  /// Tekken (Mistral Nemo): case-aware words [\p{Lu}..]*[\p{Ll}..]+, \p{N}, ...
  tekken,
  /// GPT-4o / Llama 4: tekken words with contractions, \p{N}{1,3}.
  gpt4o,
  /// BLOOM / Poro: " ?[^(\s|.,!?…。，、।۔،)]+".
  bloom,
  /// Viking: BLOOM then \p{N}.
  viking,
};

/// What a `tokenizer.ggml.pre` name implies, as llama.cpp's vocabulary loader
/// sets it: the pattern and the tokenizer flags tied to it.
struct pre_tokenizer_info {
  pre_tokenizer kind = pre_tokenizer::gpt2;
  bool ignore_merges = false; ///< a piece that is a whole token skips merging (Llama 3, Tekken)
  bool add_bos = false;       ///< add BOS unless tokenizer.ggml.add_bos_token says otherwise
  bool clean_spaces = true;   ///< decode drops the space in " ?", " !", " .", " ,", " 's", ...
};

/// The settings for a `tokenizer.ggml.pre` name ("smollm", "llama-bpe",
/// "gpt-2", "default", ...), or nullopt when we do not implement it.
[[nodiscard]] std::optional<pre_tokenizer_info> pre_tokenizer_by_name(std::string_view name) noexcept;

/// pre_tokenizer_by_name(name)->kind.
[[nodiscard]] std::optional<pre_tokenizer> pre_tokenizer_from_name(std::string_view name) noexcept;

/// Every accepted name, comma-separated (for error messages).
[[nodiscard]] std::string supported_pre_tokenizer_names();

/// Splits `text` into consecutive pieces (views into `text`) covering it
/// exactly. Invalid UTF-8 bytes are kept, each classed as a symbol (as the
/// U+FFFD llama.cpp reads them as).
[[nodiscard]] std::vector<std::string_view> pre_tokenize(pre_tokenizer kind, std::string_view text);

} // namespace dynamo::tok
