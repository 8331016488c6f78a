#include "kernels/reference/embedding.hpp"

#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/repack.hpp"

namespace dynamo::kernels::ref {

void embedding(const embedding_args& a) {
  const weight_matrix& w = a.table;
  const auto* lanes = static_cast<const std::byte*>(w.lanes);
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    float* y = a.out + t * a.out_stride;
    if (lanes != nullptr) {
      dequantize_lanes_row(w.type, lanes + static_cast<size_t>(a.ids[t]) * w.lanes_stride, y, w.k);
    } else {
      dequantize_row(w.type, w.row(a.ids[t]), y, w.k);
    }
  }
}

} // namespace dynamo::kernels::ref
