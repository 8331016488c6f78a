#include "kernels/block_copy.cuh"

#include "kernels/cuda_check.cuh"

namespace dynamo::kernels::gpu {
namespace {

constexpr unsigned threads = 256;
constexpr uint64_t chunk = 64 * 1024; // bytes per CTA

// CTA (c, r) copies bytes [c * chunk, (c + 1) * chunk) of run r: 16-byte words
// when both ends and the length allow, else single bytes.
__global__ void block_copy_kernel(block_copy_args a) {
  const byte_run run = a.runs[blockIdx.y];
  const uint64_t begin = blockIdx.x * chunk;
  if (begin >= run.length) return;
  const uint64_t end = begin + chunk < run.length ? begin + chunk : run.length;
  const auto* src = static_cast<const uint8_t*>(a.src) + run.src_offset;
  auto* dst = static_cast<uint8_t*>(a.dst) + run.dst_offset;
  const bool wide = (reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | run.length) % 16 == 0;
  if (wide) {
    const auto* s = reinterpret_cast<const uint4*>(src + begin);
    auto* d = reinterpret_cast<uint4*>(dst + begin);
    const uint64_t n = (end - begin) / 16;
    for (uint64_t i = threadIdx.x; i < n; i += threads) d[i] = s[i];
  } else {
    for (uint64_t i = begin + threadIdx.x; i < end; i += threads) dst[i] = src[i];
  }
}

} // namespace

cudaError_t launch_block_copy(const block_copy_args& a, cudaStream_t stream) {
  if (a.n_runs == 0 || a.longest == 0) return cudaSuccess;
  if (a.runs == nullptr || a.src == nullptr || a.dst == nullptr || a.n_runs > 65535) return cudaErrorInvalidValue;
  const uint64_t chunks = (a.longest + chunk - 1) / chunk;
  if (chunks > 0x7fffffffu) return cudaErrorInvalidValue;
  block_copy_kernel<<<dim3(static_cast<unsigned>(chunks), a.n_runs), threads, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
