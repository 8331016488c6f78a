// Loading a model's tokenizer from GGUF metadata (tokenizer.ggml.*). Called
// once by the model/worker setup and by tools; the result is immutable and
// shareable across threads.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/tokenizer/bpe_tokenizer.hpp"

#include <memory>

namespace dynamo::tok {

/// Reads the byte-level BPE vocabulary of `f`. Errors: errc::unsupported for
/// tokenizer models other than "gpt2" (e.g. SentencePiece "llama") or
/// pre-tokenizers we lack, naming them; errc::corrupt_file / not_found for
/// missing or malformed keys. A missing or "default" pre-tokenizer falls back
/// to plain GPT-2 with a warning.
[[nodiscard]] expected<bpe_vocab> read_bpe_vocab(const gguf::file& f);

/// read_bpe_vocab + bpe_tokenizer::create (its errors become corrupt_file).
[[nodiscard]] expected<std::shared_ptr<bpe_tokenizer>> load_tokenizer(const gguf::file& f);

} // namespace dynamo::tok
