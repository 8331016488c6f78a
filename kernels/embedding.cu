#include "kernels/embedding.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

// One block per token; threads stride over the row.
template <class T>
__global__ void embedding_kernel(const T* __restrict__ table, uint32_t n_vocab, uint32_t n_embd,
                                 const uint32_t* __restrict__ ids, float* __restrict__ out, size_t out_stride) {
  const uint32_t t = blockIdx.x;
  const uint32_t id = ids[t];
  float* y = out + t * out_stride;
  if (id >= n_vocab) {
    for (uint32_t i = threadIdx.x; i < n_embd; i += blockDim.x) y[i] = 0.0f;
    return;
  }
  const T* row = table + static_cast<size_t>(id) * n_embd;
  for (uint32_t i = threadIdx.x; i < n_embd; i += blockDim.x) y[i] = detail::to_float(row[i]);
}

} // namespace

cudaError_t launch_embedding(const embedding_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0) return cudaSuccess;
  if (a.table == nullptr || a.ids == nullptr || a.out == nullptr || a.out_stride < a.n_embd) {
    return cudaErrorInvalidValue;
  }
  constexpr unsigned threads = 256;
  if (a.dtype == half_type::bf16) {
    embedding_kernel<<<a.n_tokens, threads, 0, stream>>>(static_cast<const __nv_bfloat16*>(a.table), a.n_vocab,
                                                         a.n_embd, a.ids, a.out, a.out_stride);
  } else {
    embedding_kernel<<<a.n_tokens, threads, 0, stream>>>(static_cast<const __half*>(a.table), a.n_vocab, a.n_embd,
                                                         a.ids, a.out, a.out_stride);
  }
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
