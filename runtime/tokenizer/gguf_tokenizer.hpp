// Loading a model's tokenizer from GGUF metadata (tokenizer.ggml.*), with the
// defaults llama.cpp applies. Called once by the model/worker setup and by
// tools; the result is immutable and shareable across threads.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/tokenizer/bpe_tokenizer.hpp"
#include "runtime/tokenizer/spm_tokenizer.hpp"

#include <memory>

namespace dynamo::tok {

/// The tokenizer.ggml.model values load_tokenizer accepts, comma-separated.
inline constexpr std::string_view supported_tokenizer_models = "gpt2 (byte-level BPE), llama (SentencePiece)";

/// Reads the byte-level BPE vocabulary of `f` (tokenizer.ggml.model "gpt2").
/// Errors: errc::unsupported for other models or pre-tokenizers we lack,
/// naming them and listing the supported ones; errc::corrupt_file /
/// not_found for missing or malformed keys. A missing tokenizer.ggml.pre is
/// llama.cpp's "default" pre-tokenizer (with a warning).
[[nodiscard]] expected<bpe_vocab> read_bpe_vocab(const gguf::file& f);

/// Reads the SentencePiece vocabulary of `f` (tokenizer.ggml.model "llama"),
/// with llama.cpp's defaults: BOS 1, EOS 2, unknown 0 when not named, BOS
/// added and a space prefixed unless the file says otherwise.
[[nodiscard]] expected<spm_vocab> read_spm_vocab(const gguf::file& f);

/// The tokenizer tokenizer.ggml.model names. Errors: errc::unsupported for
/// other models (naming the model and listing the supported ones), the
/// read_*_vocab errors, and the tokenizer's own (as corrupt_file).
[[nodiscard]] expected<std::shared_ptr<tokenizer>> load_tokenizer(const gguf::file& f);

} // namespace dynamo::tok
