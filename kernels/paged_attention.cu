#include "kernels/paged_attention.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

constexpr int n_warps = 4;
constexpr int max_group = 8;

/// VPL = head-dimension values per lane: lane l owns dims [l * VPL, l * VPL + VPL).
template <int VPL>
struct alignas(2 * VPL) bf16_vec {
  __nv_bfloat16 v[VPL];
};

/// Loads this lane's values of a head row (zeros past head_dim).
template <int VPL>
__device__ __forceinline__ void load_lane(const __nv_bfloat16* row, uint32_t lane, uint32_t head_dim, bool vec,
                                          float (&y)[VPL]) {
  const uint32_t d0 = lane * VPL;
  if (vec && head_dim == 32 * VPL) { // full rows whose starts are 16-byte aligned: one vector load
    const bf16_vec<VPL> v = *reinterpret_cast<const bf16_vec<VPL>*>(row + d0);
#pragma unroll
    for (int j = 0; j < VPL; ++j) y[j] = __bfloat162float(v.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < VPL; ++j) y[j] = d0 + j < head_dim ? __bfloat162float(row[d0 + j]) : 0.0f;
  }
}

/// Key range [begin, end) of partition `part` for a query at context length ctx.
__device__ __forceinline__ void key_range(const paged_attention_args& a, uint32_t ctx, uint32_t part, uint32_t& begin,
                                          uint32_t& end) {
  if (a.partition_size == 0) {
    begin = 0;
    end = ctx;
    return;
  }
  begin = part * a.partition_size;
  end = part + 1 == a.max_partitions ? ctx : min(ctx, begin + a.partition_size);
}

template <int VPL>
__global__ void __launch_bounds__(n_warps * 32) attention_kernel(paged_attention_args a, bool vec) {
  __shared__ float sm_m[n_warps][max_group];
  __shared__ float sm_l[n_warps][max_group];
  __shared__ float sm_acc[n_warps][max_group][32 * VPL];

  const uint32_t t = blockIdx.x, kvh = blockIdx.y, part = blockIdx.z;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t D = a.kv.head_dim, group = a.n_head / a.kv.n_kv_head, h0 = kvh * group;
  const uint32_t ctx = a.positions[t] + 1;
  uint32_t begin, end;
  key_range(a, ctx, part, begin, end);
  if (begin >= end) return; // an empty partition: the merge kernel never reads it

  float q[max_group][VPL];
  float m[max_group], l[max_group], acc[max_group][VPL];
  const __nv_bfloat16* q_row = a.q + t * a.q_stride;
#pragma unroll
  for (int g = 0; g < max_group; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int j = 0; j < VPL; ++j) acc[g][j] = 0.0f;
    if (g < group) {
      load_lane<VPL>(q_row + static_cast<size_t>(h0 + g) * D, lane, D, vec, q[g]);
#pragma unroll
      for (int j = 0; j < VPL; ++j) q[g][j] *= a.scale;
    }
  }

  const uint32_t* table = a.block_tables + static_cast<size_t>(a.token_seq[t]) * a.block_table_stride;
  const size_t slot_stride = static_cast<size_t>(a.kv.n_kv_head) * D;
  const size_t head_off = static_cast<size_t>(kvh) * D;
  for (uint32_t key = begin + warp; key < end; key += n_warps) {
    const size_t off = table[key / a.kv.block_size] * a.kv.block_stride + (key % a.kv.block_size) * slot_stride +
                       head_off;
    float kf[VPL], vf[VPL];
    load_lane<VPL>(a.kv.k + off, lane, D, vec, kf);
    load_lane<VPL>(a.kv.v + off, lane, D, vec, vf);
#pragma unroll
    for (int g = 0; g < max_group; ++g) {
      if (g < group) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < VPL; ++j) s += q[g][j] * kf[j];
        s = detail::warp_sum(s);
        const float m_new = fmaxf(m[g], s);
        const float alpha = expf(m[g] - m_new); // 0 on the first key (m = -inf)
        const float p = expf(s - m_new);
        l[g] = l[g] * alpha + p;
#pragma unroll
        for (int j = 0; j < VPL; ++j) acc[g][j] = acc[g][j] * alpha + p * vf[j];
        m[g] = m_new;
      }
    }
  }

  // Merge the warps' softmax states: weights exp(m_w - M) rescale each warp.
#pragma unroll
  for (int g = 0; g < max_group; ++g) {
    if (g < group) {
      if (lane == 0) {
        sm_m[warp][g] = m[g];
        sm_l[warp][g] = l[g];
      }
#pragma unroll
      for (int j = 0; j < VPL; ++j) sm_acc[warp][g][lane * VPL + j] = acc[g][j];
    }
  }
  __syncthreads();
  for (uint32_t idx = threadIdx.x; idx < group * D; idx += blockDim.x) {
    const uint32_t g = idx / D, d = idx % D;
    float M = -INFINITY;
    for (int w = 0; w < n_warps; ++w) M = fmaxf(M, sm_m[w][g]);
    float L = 0.0f, A = 0.0f;
    for (int w = 0; w < n_warps; ++w) {
      if (sm_m[w][g] == -INFINITY) continue; // a warp that saw no key
      const float s = expf(sm_m[w][g] - M);
      L += sm_l[w][g] * s;
      A += sm_acc[w][g][d] * s;
    }
    const uint32_t h = h0 + g;
    if (a.partition_size == 0) {
      a.out[t * a.out_stride + static_cast<size_t>(h) * D + d] = __float2bfloat16_rn(A / L);
    } else {
      float* ws = a.workspace + ((static_cast<size_t>(t) * a.n_head + h) * a.max_partitions + part) * (D + 2);
      ws[d] = A;
      if (d == 0) {
        ws[D] = M;
        ws[D + 1] = L;
      }
    }
  }
}

// Merges the partitions of one (token, head): out = sum_p acc_p e^(m_p - M) / sum_p l_p e^(m_p - M).
__global__ void attention_merge_kernel(paged_attention_args a) {
  const uint32_t t = blockIdx.x, h = blockIdx.y, D = a.kv.head_dim;
  const uint32_t ctx = a.positions[t] + 1;
  const uint32_t n_valid = min(a.max_partitions, (ctx + a.partition_size - 1) / a.partition_size);
  const float* ws = a.workspace + (static_cast<size_t>(t) * a.n_head + h) * a.max_partitions * (D + 2);
  float M = -INFINITY;
  for (uint32_t p = 0; p < n_valid; ++p) M = fmaxf(M, ws[p * (D + 2) + D]);
  float L = 0.0f;
  for (uint32_t p = 0; p < n_valid; ++p) L += ws[p * (D + 2) + D + 1] * expf(ws[p * (D + 2) + D] - M);
  for (uint32_t d = threadIdx.x; d < D; d += blockDim.x) {
    float A = 0.0f;
    for (uint32_t p = 0; p < n_valid; ++p) A += ws[p * (D + 2) + d] * expf(ws[p * (D + 2) + D] - M);
    a.out[t * a.out_stride + static_cast<size_t>(h) * D + d] = __float2bfloat16_rn(A / L);
  }
}

} // namespace

cudaError_t launch_paged_attention(const paged_attention_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0) return cudaSuccess;
  const uint32_t D = a.kv.head_dim, nkv = a.kv.n_kv_head;
  if (a.q == nullptr || a.out == nullptr || a.positions == nullptr || a.token_seq == nullptr ||
      a.block_tables == nullptr || a.kv.k == nullptr || a.kv.v == nullptr || a.kv.block_size == 0 || D == 0 ||
      D > 256 || nkv == 0 || nkv > 65535 || a.n_head % nkv != 0 || a.n_head / nkv > max_group ||
      a.q_stride < static_cast<size_t>(a.n_head) * D || a.out_stride < static_cast<size_t>(a.n_head) * D) {
    return cudaErrorInvalidValue;
  }
  const bool split = a.partition_size != 0;
  if (split && (a.workspace == nullptr || a.max_partitions == 0 || a.max_partitions > 65535)) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(a.n_tokens, nkv, split ? a.max_partitions : 1);
  // Vector loads need every row start 16-byte aligned (rows are head_dim apart
  // within a token, so head_dim, the strides and the base pointers decide).
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = aligned(a.q) && aligned(a.kv.k) && aligned(a.kv.v) && D % 8 == 0 && a.q_stride % 8 == 0 &&
                   a.kv.block_stride % 8 == 0;
  const unsigned threads = n_warps * 32;
  if (D <= 64) {
    attention_kernel<2><<<grid, threads, 0, stream>>>(a, vec);
  } else if (D <= 128) {
    attention_kernel<4><<<grid, threads, 0, stream>>>(a, vec);
  } else {
    attention_kernel<8><<<grid, threads, 0, stream>>>(a, vec);
  }
  DYNAMO_CUDA_TRY(last_launch_error());
  if (split) {
    attention_merge_kernel<<<dim3(a.n_tokens, a.n_head), 128, 0, stream>>>(a);
    DYNAMO_CUDA_TRY(last_launch_error());
  }
  return cudaSuccess;
}

} // namespace dynamo::kernels::gpu
