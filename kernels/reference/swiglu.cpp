#include "kernels/reference/swiglu.hpp"

#include "kernels/reference/simd_kernels.hpp"

namespace dynamo::kernels::ref {

void swiglu(const swiglu_args& a) {
  const auto row = detail::active_kernels().swiglu_row;
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    row(a.gate + t * a.in_stride, a.up + t * a.in_stride, a.out + t * a.out_stride, a.n);
  }
}

} // namespace dynamo::kernels::ref
