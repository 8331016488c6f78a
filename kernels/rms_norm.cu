#include "kernels/rms_norm.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

// One block per output row. Pass 1 adds the residual, writes x back and sums
// squares; pass 2 re-reads x (L1/L2-resident) and writes the scaled row.
__global__ void rms_norm_kernel(rms_norm_args a) {
  __shared__ float scratch[32];
  const uint32_t i = blockIdx.x;
  const size_t r = a.rows != nullptr ? a.rows[i] : i;
  float* x = a.x + r * a.x_stride;
  const __nv_bfloat16* res = a.residual != nullptr ? a.residual + r * a.residual_stride : nullptr;
  float sq = 0.0f;
  for (uint32_t j = threadIdx.x; j < a.n; j += blockDim.x) {
    float v = x[j];
    if (res != nullptr) {
      v += __bfloat162float(res[j]);
      x[j] = v;
    }
    sq += v * v;
  }
  const float total = detail::block_sum(sq, scratch);
  const float scale = rsqrtf(total / static_cast<float>(a.n) + a.eps);
  __nv_bfloat16* out = a.out + i * a.out_stride;
  for (uint32_t j = threadIdx.x; j < a.n; j += blockDim.x) out[j] = __float2bfloat16_rn(x[j] * scale * a.weight[j]);
}

} // namespace

cudaError_t launch_rms_norm(const rms_norm_args& a, cudaStream_t stream) {
  if (a.n_rows == 0) return cudaSuccess;
  if (a.x == nullptr || a.weight == nullptr || a.out == nullptr || a.n == 0 || a.x_stride < a.n ||
      a.out_stride < a.n || (a.residual != nullptr && a.residual_stride < a.n)) {
    return cudaErrorInvalidValue;
  }
  const unsigned threads = a.n <= 1024 ? 128 : (a.n <= 4096 ? 256 : 512);
  rms_norm_kernel<<<a.n_rows, threads, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
