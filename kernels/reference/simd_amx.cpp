// The VNNI path plus AMX-INT8 tile products for the K-quant lane rows of a
// prefill (simd_x86_amx.inc); chosen by cpu_features only when the CPU has
// AMX-TILE and AMX-INT8 and the OS granted the tile state to this process.
#if defined(__x86_64__)
#define DYNAMO_SIMD_TARGET "avx2,fma,f16c,avx512f,avx512vnni,avx512vl,avx512bw,amx-tile,amx-int8"
#define DYNAMO_SIMD_VNNI 1
#define DYNAMO_SIMD_AMX 1
#include "kernels/reference/simd_x86.inc"

namespace dynamo::kernels::ref::detail {
const kernel_table* amx_kernels() noexcept { return &table; }
} // namespace dynamo::kernels::ref::detail
#else
#include "kernels/reference/simd_kernels.hpp"
namespace dynamo::kernels::ref::detail {
const kernel_table* amx_kernels() noexcept { return nullptr; }
} // namespace dynamo::kernels::ref::detail
#endif
