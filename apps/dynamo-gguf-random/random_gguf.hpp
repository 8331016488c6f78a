// Writes random-weight Llama GGUF files of any shape (benchmarks of the CUDA
// engine at 8B scale without downloading weights): weights ~N(0, std) from a
// counter-based generator (deterministic per seed, generated in parallel),
// unit norm weights, and a minimal byte-level BPE tokenizer (gpt2 model,
// ChatML control tokens) so the engine and frontend load it. Tensors are
// streamed to disk chunk by chunk; memory stays bounded at any size.
// Pure functions over their arguments; any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/tensor_type.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::apps {

struct random_gguf_options {
  std::string name = "random-llama";
  uint32_t n_layer = 2;
  uint32_t n_embd = 64;       ///< multiple of 32
  uint32_t n_head = 4;
  uint32_t n_kv_head = 2;     ///< divides n_head
  uint32_t n_ff = 128;        ///< multiple of 32
  uint32_t n_vocab = 300;     ///< >= 259 (3 control tokens + 256 bytes)
  uint32_t context_length = 256;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  gguf::tensor_type type = gguf::tensor_type::bf16; ///< matrices: f16, bf16, q8_0 or q4_1
  bool tied_embeddings = false;
  float stddev = 0.02f;       ///< of every matrix and the embeddings
  uint64_t seed = 1;
  unsigned threads = 0;       ///< generator threads; 0 = hardware threads
};

/// Named shapes: "llama-3.1-8b" (32 layers, 4096, 32/8 heads, FFN 14336,
/// vocab 128256, rope base 500000, untied, context 8192), "smollm2-135m"
/// (30 layers, 576, 9/3 heads, 1536, 49152, 100000, tied, 8192) and "tiny".
/// Errors: invalid_argument naming the presets.
[[nodiscard]] expected<random_gguf_options> random_gguf_preset(std::string_view name);

/// Parses f16 | bf16 | q8_0 | q4_1.
[[nodiscard]] expected<gguf::tensor_type> parse_weight_type(std::string_view name);

/// Checks the shape (divisibility, block sizes, vocabulary size).
[[nodiscard]] expected<void> validate(const random_gguf_options& o);

/// Parameters of the model (all tensors, norms included).
[[nodiscard]] uint64_t parameter_count(const random_gguf_options& o) noexcept;

/// The tokenizer vocabulary: <|endoftext|>, <|im_start|>, <|im_end|>
/// (control), the 256 bytes in GPT-2's byte-to-unicode form, merges of
/// printable ASCII pairs while ids last, then unused fillers.
struct byte_vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};
[[nodiscard]] byte_vocab make_byte_vocab(uint32_t n_vocab);

/// Writes the file. Returns its size in bytes. Errors: validate()'s, io_error.
[[nodiscard]] expected<uint64_t> write_random_gguf(const random_gguf_options& o, const std::string& path);

} // namespace dynamo::apps
