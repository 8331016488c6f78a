#include "kernels/reference/embedding.hpp"

#include "kernels/reference/dequantize.hpp"

namespace dynamo::kernels::ref {

void embedding(const embedding_args& a) {
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    dequantize_row(a.table.type, a.table.row(a.ids[t]), a.out + t * a.out_stride, a.table.k);
  }
}

} // namespace dynamo::kernels::ref
