#include "kernels/token_bitmask.cuh"

#include "kernels/cuda_check.cuh"

namespace dynamo::kernels::gpu {
namespace {

constexpr unsigned threads = 256;

// One thread per logit of one masked row (grid.y: the mask row).
__global__ void __launch_bounds__(threads) token_bitmask_kernel(token_bitmask_args a) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= a.n_vocab) return;
  const uint32_t r = blockIdx.y;
  const uint32_t w = t / 64;
  const uint64_t bits = w < a.mask_words ? a.mask[size_t(r) * a.mask_words + w] : 0;
  if (((bits >> (t % 64)) & 1) == 0) a.logits[size_t(a.rows[r]) * a.logits_stride + t] = -INFINITY;
}

} // namespace

cudaError_t launch_token_bitmask(const token_bitmask_args& a, cudaStream_t stream) {
  if (a.n_rows == 0 || a.n_vocab == 0) return cudaSuccess;
  if (a.logits == nullptr || a.mask == nullptr || a.rows == nullptr || a.logits_stride < a.n_vocab || a.n_rows > 65535)
    return cudaErrorInvalidValue;
  const dim3 grid((a.n_vocab + threads - 1) / threads, a.n_rows);
  token_bitmask_kernel<<<grid, threads, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
