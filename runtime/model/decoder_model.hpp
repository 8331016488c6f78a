// A loaded decoder model: the GGUF file (kept mapped), its config, and views
// of every weight in its stored type (1-D norm, bias and RoPE-factor vectors
// widened to fp32; Q4_0, IQ4_NL, Q8_0, IQ4_XS, Q4_K, Q5_K and Q6_K matrices also
// repacked for the CPU matmul, still quantized). Built once by load(); immutable afterwards, shared by threads.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/model/decoder_config.hpp"

#include "kernels/reference/tensor_type.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace dynamo::gguf {
class file;
}

namespace dynamo::model {

using kernels::ref::weight_matrix;

/// n_expert matrices of one shape stored as one 3-D GGUF tensor
/// [k, rows, n_expert]: expert e is rows [e * rows, (e + 1) * rows) of `stacked`.
struct expert_stack {
  weight_matrix stacked; ///< [n_expert * rows, k]
  uint32_t rows = 0;     ///< rows per expert

  [[nodiscard]] weight_matrix expert(uint32_t e) const noexcept {
    const void* lanes = stacked.lanes == nullptr ? nullptr
                                                 : static_cast<const std::byte*>(stacked.lanes) +
                                                       static_cast<size_t>(e) * rows * stacked.lanes_stride;
    return {stacked.type, stacked.k, rows, stacked.row(e * rows), lanes, stacked.lanes_stride};
  }
};

/// The FFN of an MoE layer: a router over n_expert SwiGLU experts, and for
/// Qwen2-MoE a shared expert whose output is gated by sigmoid(h . gate).
struct moe_layer_weights {
  weight_matrix router;          ///< ffn_gate_inp [n_expert rows, n_embd]
  expert_stack gate;             ///< ffn_gate_exps [n_ff_expert rows each, n_embd]
  expert_stack up;               ///< ffn_up_exps   [n_ff_expert rows each, n_embd]
  expert_stack down;             ///< ffn_down_exps [n_embd rows each, n_ff_expert]
  weight_matrix shared_gate_inp; ///< ffn_gate_inp_shexp [1 row, n_embd]; data null without a shared expert
  weight_matrix shared_gate;     ///< ffn_gate_shexp [n_ff_shared rows, n_embd]
  weight_matrix shared_up;       ///< ffn_up_shexp   [n_ff_shared rows, n_embd]
  weight_matrix shared_down;     ///< ffn_down_shexp [n_embd rows, n_ff_shared]

  [[nodiscard]] bool has_shared_expert() const noexcept { return shared_gate.data != nullptr; }
};

struct decoder_layer_weights {
  std::vector<float> attn_norm; ///< [n_embd]
  weight_matrix wq;             ///< [n_head * head_dim rows, n_embd]
  weight_matrix wk;             ///< [n_kv_head * head_dim rows, n_embd]
  weight_matrix wv;             ///< [n_kv_head * head_dim rows, n_embd]
  weight_matrix wo;             ///< [n_embd rows, n_head * head_dim]
  std::vector<float> bq, bk, bv; ///< attention biases (Qwen2); empty when absent
  std::vector<float> bo;        ///< attn_output.bias [n_embd]; empty when absent
  std::vector<float> q_norm;    ///< attn_q_norm [head_dim] (Qwen3); empty when absent
  std::vector<float> k_norm;    ///< attn_k_norm [head_dim] (Qwen3); empty when absent
  std::vector<float> ffn_norm;  ///< [n_embd]
  weight_matrix w_gate;         ///< dense FFN [n_ff rows, n_embd]; data null in MoE layers
  weight_matrix w_up;           ///< dense FFN [n_ff rows, n_embd]
  weight_matrix w_down;         ///< dense FFN [n_embd rows, n_ff]
  moe_layer_weights moe;        ///< MoE layers only (config().is_moe())
};

struct decoder_weights {
  weight_matrix token_embd;       ///< [n_vocab rows, n_embd]
  std::vector<decoder_layer_weights> layers;
  std::vector<float> output_norm; ///< [n_embd]
  weight_matrix output;           ///< [n_vocab rows, n_embd]; token_embd when tied
  bool tied_embeddings = false;
  /// rope_freqs.weight [rot_dim / 2] (Llama 3.1 scaling): pair i's frequency
  /// is divided by rope_freqs[i]. Empty when absent.
  std::vector<float> rope_freqs;
};

/// How load() prepares the weights.
struct load_options {
  /// Give the matrices whose CPU matmul is faster in the lane layout (Q4_0, IQ4_NL, Q8_0, IQ4_XS, Q4_K, Q5_K, Q6_K;
  /// kernels/reference/repack.hpp) a repacked copy: quantized, about the same
  /// size, in anonymous memory. The copied file pages then leave the process
  /// (gguf::file::release_pages); what still reads the file (the token embedding
  /// lookup, also when it is the tied LM head; reference mode) faults back the
  /// pages it touches. The CUDA engine, which never runs the CPU matmul, turns it off.
  bool cpu_repack = true;
  /// Threads for the repack, the caller included; 0 = hardware threads
  /// (cpu_executor passes its compute threads).
  unsigned threads = 0;
};

class decoder_model {
public:
  /// Maps and loads a GGUF file. Errors: the GGUF reader's (not_found,
  /// io_error, corrupt_file, unsupported), then config and weight checks:
  /// corrupt_file naming a missing or mis-shaped tensor, unsupported for a
  /// storage type the kernels lack or a tensor the architecture does not use.
  [[nodiscard]] static expected<std::shared_ptr<const decoder_model>> load(const std::string& path,
                                                                           const load_options& options = {});

  /// Same, from an already parsed file (tests build files in memory).
  [[nodiscard]] static expected<std::shared_ptr<const decoder_model>> from_file(std::shared_ptr<const gguf::file> f,
                                                                                const load_options& options = {});

  [[nodiscard]] const decoder_config& config() const noexcept { return config_; }
  [[nodiscard]] const decoder_weights& weights() const noexcept { return weights_; }
  [[nodiscard]] const gguf::file& file() const noexcept { return *file_; }

  /// Bytes of weight data in all matrices (every expert included).
  [[nodiscard]] size_t weight_bytes() const noexcept;

  /// Bytes of matrix data one token streams through: dense layers fully, MoE
  /// layers their router, expert_used_count experts and the shared expert.
  [[nodiscard]] size_t active_weight_bytes() const noexcept;

  /// Bytes of the repacked copies (load_options::cpu_repack).
  [[nodiscard]] size_t repacked_bytes() const noexcept;

private:
  decoder_model() = default;

  std::shared_ptr<const gguf::file> file_;
  decoder_config config_;
  decoder_weights weights_;
  /// What weights_' lanes point into: 2 MB-aligned arenas from std::aligned_alloc.
  std::vector<std::unique_ptr<std::byte, void (*)(void*)>> repacked_;
  size_t repacked_bytes_ = 0;
};

} // namespace dynamo::model
