#include "kernels/reference/token_bitmask.hpp"

#include <limits>

namespace dynamo::kernels::ref {

void apply_token_bitmask(const token_bitmask_args& a) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  for (uint32_t r = 0; r < a.n_rows; ++r) {
    float* row = a.logits + r * a.logits_stride;
    const uint64_t* m = a.mask + size_t(r) * a.mask_words;
    for (uint32_t w = 0; w * 64 < a.n_vocab; ++w) {
      const uint64_t bits = w < a.mask_words ? m[w] : 0;
      if (bits == ~uint64_t{0}) continue;
      const uint32_t end = a.n_vocab - w * 64 < 64 ? a.n_vocab - w * 64 : 64;
      for (uint32_t b = 0; b < end; ++b)
        if (((bits >> b) & 1) == 0) row[w * 64 + b] = neg_inf;
    }
  }
}

} // namespace dynamo::kernels::ref
