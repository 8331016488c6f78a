// Error plumbing shared by the CUDA launchers and their callers: CUDA failures
// are values (cudaError_t), never aborts. DYNAMO_CUDA_TRY returns the error
// from the enclosing function; the executor turns it into errc::device_error.
// Host-only; includable from plain C++ (no device code here).
#pragma once

#include <cuda_runtime_api.h>

/// Evaluates `expr` (a cudaError_t); returns it from the enclosing function
/// (which must return cudaError_t) when it is not cudaSuccess.
#define DYNAMO_CUDA_TRY(expr)                                                                                     \
  do {                                                                                                            \
    const cudaError_t dynamo_cuda_try_err_ = (expr);                                                              \
    if (dynamo_cuda_try_err_ != cudaSuccess) return dynamo_cuda_try_err_;                                        \
  } while (0)

namespace dynamo::kernels::gpu {

/// The launch error of the kernel just launched on this thread (cudaGetLastError);
/// launchers end with `return last_launch_error();`.
[[nodiscard]] inline cudaError_t last_launch_error() noexcept { return cudaGetLastError(); }

/// True when a CUDA device can be used: any error from the runtime (no driver,
/// "driver insufficient", no device) counts as "no GPU". Never throws or aborts.
[[nodiscard]] bool cuda_available() noexcept;

} // namespace dynamo::kernels::gpu
