// Copies many byte runs between two device buffers in one launch (KV blocks of a
// hand-off: scattered source and destination blocks). Called by the cuda-ipc KV
// transport, whose per-run cudaMemcpyAsync cost ~5 us each. Stream-ordered; the
// run list must be in device memory. CPU reference: a memcpy per run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace dynamo::kernels::gpu {

struct byte_run {
  uint64_t src_offset = 0;
  uint64_t dst_offset = 0;
  uint64_t length = 0;
};

struct block_copy_args {
  const byte_run* runs = nullptr; ///< [n_runs] device
  uint32_t n_runs = 0;
  uint64_t longest = 0;           ///< the longest run's length (sizes the grid)
  const void* src = nullptr;      ///< device (or mapped peer) memory
  void* dst = nullptr;
};

[[nodiscard]] cudaError_t launch_block_copy(const block_copy_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
