// Hyperparameters of a decoder-only transformer (Llama 2/3, Mistral, Mixtral,
// Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE), read from GGUF metadata and validated
// (every error names the offending key). Built once at model load, then an
// immutable value shared by the forward passes, KV cache and executors.
#pragma once

#include "runtime/core/error.hpp"

#include "kernels/reference/rope.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::gguf {
class file;
}

namespace dynamo::model {

/// general.architecture values we serve. Mistral and Mixtral GGUFs say "llama".
enum class architecture : uint8_t { llama, qwen2, qwen2moe, qwen3, qwen3moe };

/// What an architecture fixes, beyond the metadata: tensors it requires and
/// how its RoPE pairs elements (research/engine.md 1.5).
struct architecture_traits {
  architecture arch;
  std::string_view name;         ///< GGUF spelling, also the metadata key prefix
  kernels::ref::rope_style rope; ///< norm for llama (permuted Q/K rows), neox for Qwen
  bool qkv_bias;                 ///< attn_{q,k,v}.bias required (else optional)
  bool qk_norm;                  ///< attn_{q,k}_norm.weight: RMSNorm per head before RoPE
  bool moe;                      ///< expert FFNs required (llama: when expert_count > 0)
  bool shared_expert;            ///< ffn_*_shexp + sigmoid gate (Qwen2-MoE)
  bool norm_topk;                ///< renormalise the top-k router probabilities to sum 1
};

[[nodiscard]] const architecture_traits& traits_of(architecture a) noexcept;

/// The architecture named `name`, or nullopt when we do not serve it.
[[nodiscard]] std::optional<architecture> architecture_from_name(std::string_view name) noexcept;

/// "llama, qwen2, ..." for error messages.
[[nodiscard]] std::string supported_architectures();

/// Mixture-of-experts FFN shape; n_expert == 0 means a dense FFN.
struct moe_config {
  uint32_t n_expert = 0;      ///< <arch>.expert_count
  uint32_t n_expert_used = 0; ///< <arch>.expert_used_count: experts per token (top-k)
  uint32_t n_ff_expert = 0;   ///< <arch>.expert_feed_forward_length (default feed_forward_length)
  uint32_t n_ff_shared = 0;   ///< <arch>.expert_shared_feed_forward_length; 0 without a shared expert
  bool norm_topk = false;     ///< the k selected probabilities are renormalised to sum 1
  float weights_scale = 1.0f; ///< <arch>.expert_weights_scale (0 or absent: 1)
};

struct decoder_config {
  architecture arch = architecture::llama;
  uint32_t n_layer = 0;      ///< <arch>.block_count
  uint32_t n_embd = 0;       ///< <arch>.embedding_length
  uint32_t n_ff = 0;         ///< <arch>.feed_forward_length (dense FFN width)
  uint32_t n_head = 0;       ///< <arch>.attention.head_count
  uint32_t n_kv_head = 0;    ///< <arch>.attention.head_count_kv (default n_head)
  uint32_t head_dim = 0;     ///< <arch>.attention.key_length (default n_embd / n_head)
  uint32_t rot_dim = 0;      ///< <arch>.rope.dimension_count (default head_dim)
  uint32_t n_vocab = 0;      ///< <arch>.vocab_size (default: rows of token_embd)
  uint32_t context_length = 0; ///< <arch>.context_length
  float rope_base = 10000.0f;  ///< <arch>.rope.freq_base
  /// Positions are multiplied by this before RoPE: 1 / <arch>.rope.scaling.factor
  /// for "linear" scaling, else 1. (Llama 3.1's scaling is the per-pair
  /// rope_freqs.weight tensor, held with the weights.)
  float rope_freq_scale = 1.0f;
  float rms_eps = 1e-5f;       ///< <arch>.attention.layer_norm_rms_epsilon
  kernels::ref::rope_style rope = kernels::ref::rope_style::norm;
  moe_config moe;

  /// Query heads per KV head.
  [[nodiscard]] uint32_t group() const noexcept { return n_head / n_kv_head; }
  [[nodiscard]] bool is_moe() const noexcept { return moe.n_expert > 0; }
  [[nodiscard]] const architecture_traits& traits() const noexcept { return traits_of(arch); }
  /// The GGUF metadata key prefix and name of the architecture ("qwen3").
  [[nodiscard]] std::string_view arch_name() const noexcept { return traits().name; }
};

/// Reads and validates the config. Errors: errc::corrupt_file naming a missing
/// or ill-typed key or an inconsistent shape; errc::unsupported naming an
/// architecture we do not serve (listing those we do) or a RoPE scaling type
/// we do not implement.
[[nodiscard]] expected<decoder_config> read_decoder_config(const gguf::file& f);

/// Checks the invariants the forward passes rely on (positive sizes, head
/// counts that divide, even rot_dim <= head_dim, a sane expert setup). Used by
/// read_decoder_config and by code that builds configs by hand.
[[nodiscard]] expected<void> validate(const decoder_config& c);

} // namespace dynamo::model
