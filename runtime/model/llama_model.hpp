// A loaded Llama-family model: the GGUF file (kept mapped), its config, and
// views of every weight in its stored type (no copies of quantized data; only
// the 1-D norm weights are widened to fp32). Built once by load(); immutable
// afterwards and safe to share between threads and executors.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/model/llama_config.hpp"

#include "kernels/reference/weight_types.hpp"

#include <memory>
#include <string>
#include <vector>

namespace dynamo::gguf {
class file;
}

namespace dynamo::model {

using kernels::ref::weight_matrix;

struct llama_layer_weights {
  std::vector<float> attn_norm; ///< [n_embd]
  weight_matrix wq;             ///< [n_head * head_dim rows, n_embd]
  weight_matrix wk;             ///< [n_kv_head * head_dim rows, n_embd]
  weight_matrix wv;             ///< [n_kv_head * head_dim rows, n_embd]
  weight_matrix wo;             ///< [n_embd rows, n_head * head_dim]
  std::vector<float> ffn_norm;  ///< [n_embd]
  weight_matrix w_gate;         ///< [n_ff rows, n_embd]
  weight_matrix w_up;           ///< [n_ff rows, n_embd]
  weight_matrix w_down;         ///< [n_embd rows, n_ff]
};

struct llama_weights {
  weight_matrix token_embd;      ///< [n_vocab rows, n_embd]
  std::vector<llama_layer_weights> layers;
  std::vector<float> output_norm; ///< [n_embd]
  weight_matrix output;          ///< [n_vocab rows, n_embd]; token_embd when tied
  bool tied_embeddings = false;
};

class llama_model {
public:
  /// Maps and loads a GGUF file. Errors: the GGUF reader's (not_found,
  /// io_error, corrupt_file, unsupported), then config and weight checks:
  /// corrupt_file naming a missing or mis-shaped tensor, unsupported for a
  /// storage type the kernels lack.
  [[nodiscard]] static expected<std::shared_ptr<const llama_model>> load(const std::string& path);

  /// Same, from an already parsed file (tests build files in memory).
  [[nodiscard]] static expected<std::shared_ptr<const llama_model>> from_file(std::shared_ptr<const gguf::file> f);

  [[nodiscard]] const llama_config& config() const noexcept { return config_; }
  [[nodiscard]] const llama_weights& weights() const noexcept { return weights_; }
  [[nodiscard]] const gguf::file& file() const noexcept { return *file_; }

  /// Bytes of weight data the forward pass streams per token (all matrices).
  [[nodiscard]] size_t weight_bytes() const noexcept;

private:
  llama_model() = default;

  std::shared_ptr<const gguf::file> file_;
  llama_config config_;
  llama_weights weights_;
};

} // namespace dynamo::model
