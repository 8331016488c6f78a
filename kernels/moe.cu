#include "kernels/moe.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

using detail::full_mask;

// ---- routing ---------------------------------------------------------------

// One block per token. Warps compute the router rows' dot products (lanes
// stride over n_embd, then a warp sum); thread 0 then runs the softmax and the
// top-k serially, mirroring ref::softmax and ref::moe_route step for step.
__global__ void moe_route_kernel(moe_route_args a) {
  extern __shared__ float logit[]; // [n_expert + 1]: the router logits, then the shared gate's
  const uint32_t t = blockIdx.x;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  const __nv_bfloat16* x = a.x + t * a.x_stride;
  const uint32_t rows = a.n_expert + (a.shared_gate_w != nullptr ? 1 : 0);
  for (uint32_t e = warp; e < rows; e += n_warps) {
    const float* w = e < a.n_expert ? a.router + static_cast<size_t>(e) * a.n_embd : a.shared_gate_w;
    float s = 0.0f;
    for (uint32_t i = lane; i < a.n_embd; i += 32) s += __bfloat162float(x[i]) * w[i];
    s = detail::warp_sum(s);
    if (lane == 0) logit[e] = s;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  const uint32_t E = a.n_expert;
  if (a.logits != nullptr) {
    for (uint32_t e = 0; e < E; ++e) a.logits[static_cast<size_t>(t) * E + e] = logit[e];
  }
  if (a.shared_gate_w != nullptr) a.shared_gate[t] = logit[E];
  // Softmax in place (ref::softmax: exp in fp32, the sum in double).
  float mx = logit[0];
  for (uint32_t e = 1; e < E; ++e) mx = fmaxf(mx, logit[e]);
  if (!isfinite(mx)) { // all -inf, or +inf present: mass on the maxima
    float count = 0.0f;
    for (uint32_t e = 0; e < E; ++e) {
      logit[e] = logit[e] == mx ? 1.0f : 0.0f;
      count += logit[e];
    }
    for (uint32_t e = 0; e < E; ++e) logit[e] /= count;
  } else {
    double sum = 0.0;
    for (uint32_t e = 0; e < E; ++e) {
      logit[e] = expf(logit[e] - mx);
      sum += logit[e];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (uint32_t e = 0; e < E; ++e) logit[e] *= inv;
  }
  // Top-k by repeated arg-max; a strict > keeps the lower id on ties. A chosen
  // expert's probability is overwritten with -1 (probabilities are >= 0).
  uint32_t* expert = a.expert + static_cast<size_t>(t) * a.k;
  float* weight = a.weight + static_cast<size_t>(t) * a.k;
  float sum = 0.0f;
  for (uint32_t j = 0; j < a.k; ++j) {
    uint32_t best = E;
    float best_p = 0.0f;
    for (uint32_t e = 0; e < E; ++e) {
      if (logit[e] < 0.0f) continue; // already chosen
      if (best == E || logit[e] > best_p) {
        best = e;
        best_p = logit[e];
      }
    }
    logit[best] = -1.0f;
    expert[j] = best;
    weight[j] = best_p;
    sum += best_p;
  }
  // As ref::moe_route (and llama.cpp): the sum is clamped away from 0.
  const float norm = a.normalize ? a.scale / fmaxf(sum, 6.103515625e-5f) : a.scale;
  for (uint32_t j = 0; j < a.k; ++j) weight[j] *= norm;
}

// ---- grouping --------------------------------------------------------------

// One block: counts the pairs of each expert (integer atomics: the counts do
// not depend on the order) and writes the exclusive prefix sums.
__global__ void moe_count_kernel(moe_group_args a) {
  extern __shared__ uint32_t count[]; // [n_expert]
  for (uint32_t e = threadIdx.x; e < a.n_expert; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (uint32_t p = threadIdx.x; p < a.n_pairs; p += blockDim.x) atomicAdd(&count[a.expert[p]], 1u);
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t s = 0;
    for (uint32_t e = 0; e < a.n_expert; ++e) {
      a.expert_start[e] = s;
      s += count[e];
    }
    a.expert_start[a.n_expert] = s;
  }
}

constexpr unsigned place_threads = 256;

// One block per expert: walks the pairs in order, blockDim at a time, and
// gives each of its pairs the next row (a block-wide prefix count of matches
// from warp ballots), so rows within an expert follow pair order.
__global__ void __launch_bounds__(place_threads) moe_place_kernel(moe_group_args a) {
  __shared__ uint32_t warp_count[place_threads / 32];
  const uint32_t e = blockIdx.x;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t base = a.expert_start[e];
  uint32_t done = 0; // rows of this expert given out so far
  for (uint32_t p0 = 0; p0 < a.n_pairs; p0 += place_threads) {
    const uint32_t p = p0 + threadIdx.x;
    const bool mine = p < a.n_pairs && a.expert[p] == e;
    const unsigned ballot = __ballot_sync(full_mask, mine);
    if (lane == 0) warp_count[warp] = __popc(ballot);
    __syncthreads();
    uint32_t before = 0, total = 0;
    for (unsigned w = 0; w < place_threads / 32; ++w) {
      before += w < warp ? warp_count[w] : 0;
      total += warp_count[w];
    }
    if (mine) {
      const uint32_t row = base + done + before + __popc(ballot & ((1u << lane) - 1u));
      a.pair_token[row] = p / a.k;
      a.pair_row[p] = row;
    }
    done += total;
    __syncthreads(); // warp_count is rewritten by the next round
  }
}

// ---- grouped matmul --------------------------------------------------------

constexpr uint32_t mm_rows = 16;   // sorted rows per tile (one expert's)
constexpr uint32_t mm_cols = 64;   // output features per tile
constexpr uint32_t mm_depth = 32;  // k per shared-memory step
constexpr unsigned mm_threads = 256; // 16 rows x 16 column lanes, 4 outputs each

// One block per (row tile of one expert, column tile). Row tiles are numbered
// expert by expert from the device-side expert_start; blocks past the last
// tile exit. A plain shared-memory tiled GEMM in fp32.
__global__ void __launch_bounds__(mm_threads) moe_matmul_kernel(moe_matmul_args a) {
  __shared__ float xs[mm_rows][mm_depth + 1];
  __shared__ float ws[mm_cols][mm_depth + 1];
  uint32_t tile = blockIdx.x, e = 0, r0 = 0, r1 = 0;
  for (; e < a.n_expert; ++e) { // every thread computes the same: the exit below is block-uniform
    const uint32_t begin = a.expert_start[e], end = a.expert_start[e + 1];
    const uint32_t tiles = (end - begin + mm_rows - 1) / mm_rows;
    if (tile < tiles) {
      r0 = begin + tile * mm_rows;
      r1 = min(end, r0 + mm_rows);
      break;
    }
    tile -= tiles;
  }
  if (e == a.n_expert) return;
  const uint32_t n0 = blockIdx.y * mm_cols;
  const __nv_bfloat16* w = a.w + static_cast<size_t>(e) * a.n * a.w_stride;
  const uint32_t my_row = threadIdx.x / 16, my_col = threadIdx.x % 16; // outputs my_col + 16 q, q < 4
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (uint32_t k0 = 0; k0 < a.k; k0 += mm_depth) {
    for (uint32_t i = threadIdx.x; i < mm_rows * mm_depth; i += mm_threads) {
      const uint32_t r = i / mm_depth, c = i % mm_depth, row = r0 + r, col = k0 + c;
      float v = 0.0f;
      if (row < r1 && col < a.k) {
        const size_t src = a.x_row != nullptr ? a.x_row[row] : row;
        v = __bfloat162float(a.x[src * a.x_stride + col]);
      }
      xs[r][c] = v;
    }
    for (uint32_t i = threadIdx.x; i < mm_cols * mm_depth; i += mm_threads) {
      const uint32_t r = i / mm_depth, c = i % mm_depth, n = n0 + r, col = k0 + c;
      ws[r][c] = n < a.n && col < a.k ? __bfloat162float(w[static_cast<size_t>(n) * a.w_stride + col]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (uint32_t c = 0; c < mm_depth; ++c) {
      const float xv = xs[my_row][c];
#pragma unroll
      for (uint32_t q = 0; q < 4; ++q) acc[q] += xv * ws[my_col + 16 * q][c];
    }
    __syncthreads();
  }
  const uint32_t row = r0 + my_row;
  if (row >= r1) return;
#pragma unroll
  for (uint32_t q = 0; q < 4; ++q) {
    const uint32_t n = n0 + my_col + 16 * q;
    if (n < a.n) a.y[static_cast<size_t>(row) * a.y_stride + n] = __float2bfloat16_rn(acc[q]);
  }
}

// ---- combining -------------------------------------------------------------

// One block per token; threads stride over the row.
__global__ void moe_combine_kernel(moe_combine_args a) {
  const uint32_t t = blockIdx.x;
  const float* weight = a.weight + static_cast<size_t>(t) * a.k;
  const uint32_t* rows = a.pair_row + static_cast<size_t>(t) * a.k;
  const float gate = a.shared != nullptr ? 1.0f / (1.0f + expf(-a.shared_gate[t])) : 0.0f;
  for (uint32_t i = threadIdx.x; i < a.n; i += blockDim.x) {
    float o = 0.0f;
    for (uint32_t j = 0; j < a.k; ++j) {
      o += weight[j] * __bfloat162float(a.y[static_cast<size_t>(rows[j]) * a.y_stride + i]);
    }
    if (a.shared != nullptr) o += gate * __bfloat162float(a.shared[static_cast<size_t>(t) * a.shared_stride + i]);
    a.out[static_cast<size_t>(t) * a.out_stride + i] = __float2bfloat16_rn(o);
  }
}

} // namespace

cudaError_t launch_moe_route(const moe_route_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0) return cudaSuccess;
  if (a.x == nullptr || a.router == nullptr || a.expert == nullptr || a.weight == nullptr || a.n_embd == 0 ||
      a.x_stride < a.n_embd || a.n_expert == 0 || a.n_expert > moe_max_experts || a.k == 0 || a.k > a.n_expert ||
      (a.shared_gate_w != nullptr) != (a.shared_gate != nullptr)) {
    return cudaErrorInvalidValue;
  }
  const size_t shared = (static_cast<size_t>(a.n_expert) + 1) * sizeof(float);
  moe_route_kernel<<<a.n_tokens, 128, shared, stream>>>(a);
  return last_launch_error();
}

cudaError_t launch_moe_group(const moe_group_args& a, cudaStream_t stream) {
  if (a.expert_start == nullptr || a.n_expert == 0 || a.n_expert > moe_max_experts) return cudaErrorInvalidValue;
  if (a.n_pairs > 0 && (a.expert == nullptr || a.pair_token == nullptr || a.pair_row == nullptr || a.k == 0)) {
    return cudaErrorInvalidValue;
  }
  // Always writes expert_start (zeros for no pairs), so a matmul after it sees no rows.
  moe_count_kernel<<<1, 1024, a.n_expert * sizeof(uint32_t), stream>>>(a);
  DYNAMO_CUDA_TRY(last_launch_error());
  if (a.n_pairs == 0) return cudaSuccess;
  moe_place_kernel<<<a.n_expert, place_threads, 0, stream>>>(a);
  return last_launch_error();
}

cudaError_t launch_moe_matmul(const moe_matmul_args& a, cudaStream_t stream) {
  if (a.n_rows == 0 || a.n == 0) return cudaSuccess;
  if (a.x == nullptr || a.w == nullptr || a.expert_start == nullptr || a.y == nullptr || a.k == 0 ||
      a.n_expert == 0 || a.x_stride < a.k || a.w_stride < a.k || a.y_stride < a.n) {
    return cudaErrorInvalidValue;
  }
  // At most ceil(rows / tile) + n_expert row tiles, however the rows split.
  const uint64_t row_tiles = (uint64_t(a.n_rows) + mm_rows - 1) / mm_rows + a.n_expert;
  const uint64_t col_tiles = (uint64_t(a.n) + mm_cols - 1) / mm_cols;
  if (row_tiles > 0x7fffffffu || col_tiles > 65535) return cudaErrorInvalidValue;
  moe_matmul_kernel<<<dim3(static_cast<unsigned>(row_tiles), static_cast<unsigned>(col_tiles)), mm_threads, 0,
                      stream>>>(a);
  return last_launch_error();
}

cudaError_t launch_moe_combine(const moe_combine_args& a, cudaStream_t stream) {
  if (a.n_tokens == 0 || a.n == 0) return cudaSuccess;
  if (a.y == nullptr || a.weight == nullptr || a.pair_row == nullptr || a.out == nullptr || a.k == 0 ||
      a.y_stride < a.n || a.out_stride < a.n ||
      (a.shared != nullptr && (a.shared_gate == nullptr || a.shared_stride < a.n))) {
    return cudaErrorInvalidValue;
  }
  moe_combine_kernel<<<a.n_tokens, 256, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
