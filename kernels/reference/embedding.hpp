// Embedding lookup: gathers rows of a token-embedding table (any supported
// storage type: Q8_0, F16, F32, ...) into fp32; a table with a lane copy (the
// tied LM head once repacked) is read from the copy, the same values. CPU
// reference and CPU engine op; pure function over caller buffers, any thread.
#pragma once

#include "kernels/reference/tensor_type.hpp"

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct embedding_args {
  weight_matrix table;           ///< [vocab = n, hidden = k]; rows from table.lanes when set, else table.data
  const uint32_t* ids = nullptr; ///< [n_tokens]; REQUIRES: ids[i] < table.n
  uint32_t n_tokens = 0;
  float* out = nullptr;          ///< [n_tokens, k]; token t at out + t * out_stride
  size_t out_stride = 0;
};

void embedding(const embedding_args& args);

} // namespace dynamo::kernels::ref
