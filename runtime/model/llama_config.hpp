// Hyperparameters of a Llama-family decoder, read from GGUF metadata and
// validated (every error names the offending key). Built once at model load,
// then an immutable value shared by the forward pass, KV cache and executor.
#pragma once

#include "runtime/core/error.hpp"

#include "kernels/reference/rope.hpp"

#include <cstdint>
#include <string>

namespace dynamo::gguf {
class file;
}

namespace dynamo::model {

struct llama_config {
  std::string architecture;  ///< general.architecture ("llama")
  uint32_t n_layer = 0;      ///< <arch>.block_count
  uint32_t n_embd = 0;       ///< <arch>.embedding_length
  uint32_t n_ff = 0;         ///< <arch>.feed_forward_length
  uint32_t n_head = 0;       ///< <arch>.attention.head_count
  uint32_t n_kv_head = 0;    ///< <arch>.attention.head_count_kv (default n_head)
  uint32_t head_dim = 0;     ///< <arch>.attention.key_length (default n_embd / n_head)
  uint32_t rot_dim = 0;      ///< <arch>.rope.dimension_count (default head_dim)
  uint32_t n_vocab = 0;      ///< <arch>.vocab_size (default: rows of token_embd)
  uint32_t context_length = 0; ///< <arch>.context_length
  float rope_base = 10000.0f;  ///< <arch>.rope.freq_base
  float rms_eps = 1e-5f;       ///< <arch>.attention.layer_norm_rms_epsilon
  /// GGUF llama weights had their Q/K rows permuted by the converter, so RoPE
  /// rotates adjacent pairs (research/engine.md 1.5).
  kernels::ref::rope_style rope = kernels::ref::rope_style::norm;

  /// Query heads per KV head.
  [[nodiscard]] uint32_t group() const noexcept { return n_head / n_kv_head; }
};

/// Reads and validates the config. Errors: errc::corrupt_file naming a missing
/// or ill-typed key or an inconsistent shape; errc::unsupported for another
/// architecture or RoPE scaling we do not implement.
[[nodiscard]] expected<llama_config> read_llama_config(const gguf::file& f);

/// Checks the invariants the forward pass relies on (positive sizes, head
/// counts that divide, even rot_dim <= head_dim). Used by read_llama_config
/// and by code that builds configs by hand.
[[nodiscard]] expected<void> validate(const llama_config& c);

} // namespace dynamo::model
