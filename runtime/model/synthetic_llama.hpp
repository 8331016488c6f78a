// Builds a small random-weight Llama GGUF image in memory (tests, examples,
// engine tests that need a real forward pass without the 100 MB model file).
// The weights are seeded, so a given option set always gives the same model.
// Pure function; any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/tensor_type.hpp"

#include <cstdint>
#include <memory>

namespace dynamo::gguf {
class file;
}

namespace dynamo::model {

struct synthetic_llama_options {
  uint32_t n_layer = 2;
  uint32_t n_embd = 64;  ///< multiple of 32 for quantized types
  uint32_t n_ff = 128;
  uint32_t n_head = 4;
  uint32_t n_kv_head = 2;
  uint32_t n_vocab = 256;
  uint32_t context_length = 256;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  gguf::tensor_type weight_type = gguf::tensor_type::q4_1; ///< attention and MLP matrices
  gguf::tensor_type embd_type = gguf::tensor_type::q8_0;   ///< token_embd (and output when untied)
  bool tied_embeddings = true;
  uint64_t seed = 1;
};

/// The GGUF image, parsed. Errors: the writer's, for shapes the chosen types
/// cannot encode (e.g. n_embd not a multiple of 32 with Q4_1).
[[nodiscard]] expected<std::shared_ptr<const gguf::file>> make_synthetic_llama(const synthetic_llama_options& o);

} // namespace dynamo::model
