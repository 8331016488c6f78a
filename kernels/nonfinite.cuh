// Counts non-finite values (NaN, inf) in a device buffer of bf16 or fp32: the
// executor's debug check (DYNAMO_CUDA_CHECK_FINITE=1) runs it after each op of an
// eager step to name the first op that produced one. Stream-ordered.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

/// Adds the count of non-finite values among `n` elements at `data` (bf16 when
/// `bf16`, else fp32) to `*count` (device).
[[nodiscard]] cudaError_t launch_count_nonfinite(const void* data, size_t n, bool bf16, uint32_t* count,
                                                 cudaStream_t stream);

} // namespace dynamo::kernels::gpu
