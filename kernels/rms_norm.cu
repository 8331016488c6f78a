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

// The same for rows of at most PER * blockDim.x values: x, the residual and the
// weight are all loaded at once into registers, so a row costs one round trip to
// memory plus the block reduction (decode rows are latency-bound, not bandwidth-bound).
template <int PER>
__global__ void rms_norm_row_kernel(rms_norm_args a) {
  __shared__ float scratch[32];
  const uint32_t i = blockIdx.x;
  const size_t r = a.rows != nullptr ? a.rows[i] : i;
  float* x = a.x + r * a.x_stride;
  const __nv_bfloat16* res = a.residual != nullptr ? a.residual + r * a.residual_stride : nullptr;
  float v[PER], w[PER];
  float sq = 0.0f;
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const uint32_t j = threadIdx.x + k * blockDim.x;
    v[k] = 0.0f;
    w[k] = 0.0f;
    if (j < a.n) {
      v[k] = x[j] + (res != nullptr ? __bfloat162float(res[j]) : 0.0f);
      w[k] = a.weight[j];
    }
  }
#pragma unroll
  for (int k = 0; k < PER; ++k) sq += v[k] * v[k];
  const float total = detail::block_sum(sq, scratch);
  const float scale = rsqrtf(total / static_cast<float>(a.n) + a.eps);
  __nv_bfloat16* out = a.out + i * a.out_stride;
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const uint32_t j = threadIdx.x + k * blockDim.x;
    if (j < a.n) {
      if (res != nullptr) x[j] = v[k];
      out[j] = __float2bfloat16_rn(v[k] * scale * w[k]);
    }
  }
}

} // namespace

cudaError_t launch_rms_norm(const rms_norm_args& a, cudaStream_t stream) {
  if (a.n_rows == 0) return cudaSuccess;
  if (a.x == nullptr || a.weight == nullptr || a.out == nullptr || a.n == 0 || a.x_stride < a.n ||
      a.out_stride < a.n || (a.residual != nullptr && a.residual_stride < a.n)) {
    return cudaErrorInvalidValue;
  }
  const unsigned threads = a.n <= 1024 ? 128 : (a.n <= 4096 ? 256 : 512);
  if (a.n <= 8 * threads) {
    rms_norm_row_kernel<8><<<a.n_rows, threads, 0, stream>>>(a);
  } else if (a.n <= 16 * threads) {
    rms_norm_row_kernel<16><<<a.n_rows, threads, 0, stream>>>(a);
  } else {
    rms_norm_kernel<<<a.n_rows, threads, 0, stream>>>(a);
  }
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
