// Random-weight GGUF models of every architecture decoder_model serves, in
// any shape and storage type: tiny ones in memory for tests, real shapes
// (presets such as qwen3-30b-a3b) streamed to disk for benchmarks. Weights
// come from a counter-based generator (deterministic per seed whatever the
// thread count); the tokenizer is a minimal byte-level BPE (gpt2 model,
// ChatML control tokens) that our loader and llama.cpp both accept.
// Used by dynamo-gguf-random and the model tests. Pure functions; any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/model/decoder_config.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::model {

struct random_model_options {
  std::string name = "random-tiny";
  architecture arch = architecture::llama;
  uint32_t n_layer = 2;
  uint32_t n_embd = 64;      ///< multiple of the matrix type's block size
  uint32_t n_ff = 128;       ///< dense FFN width (MoE: written as feed_forward_length only)
  uint32_t n_head = 4;
  uint32_t n_kv_head = 2;    ///< divides n_head
  uint32_t head_dim = 0;     ///< 0: n_embd / n_head (else written as attention.key_length)
  uint32_t n_vocab = 300;    ///< >= 259 (3 control tokens + 256 bytes)
  uint32_t context_length = 256;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  /// Writes rope_freqs.weight with Llama 3.1's factors (factor 8, low/high
  /// frequency factors 1 and 4, original context 8192).
  bool llama3_rope_freqs = false;
  uint32_t n_expert = 0;      ///< > 0: MoE FFNs (llama: the Mixtral layout)
  uint32_t n_expert_used = 0;
  uint32_t n_ff_expert = 0;   ///< 0: n_ff
  uint32_t n_ff_shared = 0;   ///< qwen2moe's shared expert width; 0: n_ff
  /// Base type of the attention and FFN matrices; each matrix's type follows
  /// llama-quantize's rules for it (see matrix_type).
  gguf::tensor_type type = gguf::tensor_type::bf16;
  /// llama.cpp's Q4_K_M / Q5_K_M mix (type q4_k or q5_k): more bits for
  /// attn_v and ffn_down of some layers.
  bool medium_mix = false;
  /// token_embd (and output when untied), taken as given; default: as
  /// llama-quantize picks them (see matrix_type).
  std::optional<gguf::tensor_type> embd_type;
  bool tied_embeddings = false;
  /// Writes attn_output.bias in every layer (optional in every architecture;
  /// the CUDA executor tests use it).
  bool attn_output_bias = false;
  /// Standard deviation of every matrix and the embeddings, with unit norm
  /// weights. 0 selects "scaled" weights for numerical tests: matrices of
  /// std 1/sqrt(k) (unit-variance outputs), embeddings of std 0.25, norms in
  /// [0.8, 1.2], biases of std 0.1, so logits are far from uniform.
  float stddev = 0.02f;
  uint64_t seed = 1;
  unsigned threads = 0;       ///< generator threads; 0 = hardware threads
};

/// Named real shapes: tiny, smollm2-135m, llama-3.1-8b, mistral-7b,
/// mixtral-8x7b, qwen2.5-0.5b, qwen3-0.6b, qwen3-8b, qwen3-30b-a3b,
/// qwen1.5-moe-a2.7b. Errors: invalid_argument naming the presets.
[[nodiscard]] expected<random_model_options> random_model_preset(std::string_view name);

/// The preset names, comma-separated (for --help).
[[nodiscard]] std::string random_model_presets();

/// The type of matrix `name` (a GGUF tensor name, rows of `ne0`) as
/// llama-quantize picks it for a model of base type `o.type`
/// (src/llama-quant.cpp): F32/F16/BF16 bases are used for everything; a
/// quantized base stores the LM head (output, or token_embd when tied) in
/// Q6_K (Q8_0 for a Q8_0 base or rows that do not fit the base's blocks);
/// the medium mix stores attn_v and ffn_down of layers i < n/8, i >= 7n/8 and
/// (i - n/8) % 3 == 2 in Q6_K; 8-expert models keep attn_k/attn_v in Q8_0
/// (and Q4_K_M's attn_output in Q5_K); finally rows that are not a whole
/// number of blocks fall back (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0,
/// IQ4_XS -> IQ4_NL, else F16). An explicit embd_type wins for the embeddings.
[[nodiscard]] gguf::tensor_type matrix_type(const random_model_options& o, std::string_view name, uint32_t ne0);

/// llama.cpp's general.file_type (llama_ftype) for `o`, or nullopt when no
/// llama ftype means exactly these rules (q4_k, q5_k and iq4_xs bases).
[[nodiscard]] std::optional<uint32_t> llama_file_type(const random_model_options& o) noexcept;

/// Checks the shape (divisibility, block sizes, vocabulary size, experts).
[[nodiscard]] expected<void> validate(const random_model_options& o);

/// Parameters of the model (all tensors, norms included).
[[nodiscard]] uint64_t parameter_count(const random_model_options& o) noexcept;

/// The tokenizer vocabulary: <|endoftext|>, <|im_start|>, <|im_end|>
/// (control), the 256 bytes in GPT-2's byte-to-unicode form, merges of
/// printable ASCII pairs while ids last, then user-defined filler words.
struct byte_vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};
[[nodiscard]] byte_vocab make_byte_vocab(uint32_t n_vocab);

/// Writes the file, streaming tensor by tensor (memory stays bounded at any
/// size). Returns its size in bytes. Errors: validate()'s, io_error.
[[nodiscard]] expected<uint64_t> write_random_model(const random_model_options& o, const std::string& path);

/// The same file built in memory and parsed (tests; small shapes only).
[[nodiscard]] expected<std::shared_ptr<const gguf::file>> make_random_model(const random_model_options& o);

} // namespace dynamo::model
