#include "kernels/logits_process.cuh"

#include "kernels/cuda_check.cuh"

namespace dynamo::kernels::gpu {
namespace {

constexpr unsigned threads = 256;

__global__ void __launch_bounds__(threads) logits_process_kernel(logits_process_args a) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.n_items) return;
  const logit_edit_item it = a.items[i];
  if (it.edit.token >= a.n_vocab) return;
  float* l = a.logits + it.row * a.logits_stride + it.edit.token;
  *l = kernels::apply_logit_edit(*l, it.edit, it.penalties);
}

} // namespace

cudaError_t launch_logits_process(const logits_process_args& a, cudaStream_t stream) {
  if (a.n_items == 0) return cudaSuccess;
  if (a.logits == nullptr || a.items == nullptr || a.logits_stride < a.n_vocab) return cudaErrorInvalidValue;
  logits_process_kernel<<<(a.n_items + threads - 1) / threads, threads, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
