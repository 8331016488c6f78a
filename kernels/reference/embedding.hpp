// Embedding lookup: gathers rows of a token-embedding table (any supported
// storage type: Q8_0, F16, F32, ...) into fp32. CPU reference and CPU engine
// op; pure function over caller buffers, any thread.
#pragma once

#include "kernels/reference/tensor_type.hpp"

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct embedding_args {
  weight_matrix table;           ///< [vocab = n, hidden = k]
  const uint32_t* ids = nullptr; ///< [n_tokens]; REQUIRES: ids[i] < table.n
  uint32_t n_tokens = 0;
  float* out = nullptr;          ///< [n_tokens, k]; token t at out + t * out_stride
  size_t out_stride = 0;
};

void embedding(const embedding_args& args);

} // namespace dynamo::kernels::ref
