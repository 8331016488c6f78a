// The AVX2+FMA+F16C path (compiled with a function-level target attribute, so
// the library itself needs no -march flag and still runs on older CPUs).
#if defined(__x86_64__)
#define DYNAMO_SIMD_TARGET "avx2,fma,f16c"
#define DYNAMO_SIMD_VNNI 0
#include "kernels/reference/simd_x86.inc"

namespace dynamo::kernels::ref::detail {
const kernel_table* avx2_kernels() noexcept { return &table; }
} // namespace dynamo::kernels::ref::detail
#else
#include "kernels/reference/simd_kernels.hpp"
namespace dynamo::kernels::ref::detail {
const kernel_table* avx2_kernels() noexcept { return nullptr; }
} // namespace dynamo::kernels::ref::detail
#endif
