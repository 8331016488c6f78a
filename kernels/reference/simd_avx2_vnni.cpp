// The AVX2 path with 256-bit VPDPWSSD (AVX512-VNNI + AVX512-VL) for the
// integer block dots, and AVX512-BW mask registers for the Q5 quants' fifth
// bit; everything else is the AVX2 code.
#if defined(__x86_64__)
#define DYNAMO_SIMD_TARGET "avx2,fma,f16c,avx512vnni,avx512vl,avx512bw"
#define DYNAMO_SIMD_VNNI 1
#include "kernels/reference/simd_x86.inc"

namespace dynamo::kernels::ref::detail {
const kernel_table* avx2_vnni_kernels() noexcept { return &table; }
} // namespace dynamo::kernels::ref::detail
#else
#include "kernels/reference/simd_kernels.hpp"
namespace dynamo::kernels::ref::detail {
const kernel_table* avx2_vnni_kernels() noexcept { return nullptr; }
} // namespace dynamo::kernels::ref::detail
#endif
