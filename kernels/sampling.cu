#include "kernels/sampling.cuh"

#include "kernels/counter_rng.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

constexpr unsigned threads = 1024;
constexpr double fixed_one = 1099511627776.0; // 2^40: weight 1.0 in fixed point

/// Order-preserving key: larger logit -> larger key; equal logits -> lower id larger.
__device__ __forceinline__ uint64_t sort_key(float v, uint32_t id) {
  uint32_t b = __float_as_uint(v);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (static_cast<uint64_t>(b) << 32) | (0xffffffffu - id);
}

__device__ __forceinline__ uint32_t id_of(uint64_t key) { return 0xffffffffu - static_cast<uint32_t>(key); }

/// exp((logit - max) / T) in fixed point, computed like the CPU sampler (double).
__device__ __forceinline__ uint64_t weight_fx(float logit, float max_logit, float temp) {
  const double w = exp(static_cast<double>(logit - max_logit) / static_cast<double>(temp));
  return static_cast<uint64_t>(w * fixed_one + 0.5);
}

struct shared_state {
  uint32_t count[256];
  unsigned long long mass[256];
  unsigned long long partial[32];
  double dpartial[32];
  unsigned long long top_keys[max_logprobs];
  uint32_t n_top;
  int found;
  unsigned long long above;
  uint32_t result;
};

__device__ unsigned long long warp_sum_u64(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(detail::full_mask, v, o);
  return v;
}

__device__ unsigned long long block_sum_u64(unsigned long long v, shared_state& sh) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum_u64(v);
  __syncthreads();
  if (lane == 0) sh.partial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? sh.partial[lane] : 0ull;
  return warp_sum_u64(v);
}

__device__ double block_sum_double(double v, shared_state& sh) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(detail::full_mask, v, o);
  __syncthreads();
  if (lane == 0) sh.dpartial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? sh.dpartial[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(detail::full_mask, v, o);
  return v;
}

__device__ unsigned long long block_min_u64(unsigned long long v, shared_state& sh) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(detail::full_mask, v, o));
  __syncthreads();
  if (lane == 0) sh.partial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? sh.partial[lane] : ~0ull;
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(detail::full_mask, v, o));
  return v;
}

/// Exclusive prefix sum over threads in thread order.
__device__ unsigned long long block_exclusive_scan_u64(unsigned long long v, shared_state& sh) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned long long incl = v;
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long y = __shfl_up_sync(detail::full_mask, incl, o);
    if (lane >= static_cast<unsigned>(o)) incl += y;
  }
  __syncthreads();
  if (lane == 31) sh.partial[warp] = incl;
  __syncthreads();
  unsigned long long before = 0;
  for (unsigned w = 0; w < warp; ++w) before += sh.partial[w];
  return before + incl - v;
}

/// Largest key K among row elements with key >= lo such that the statistic
/// of {key >= K, key >= lo} meets the target: count >= target (kMass false),
/// or fixed-point mass >= target (> target when strict). Digit by digit from
/// the top, 8 bits per pass; the chosen digit always holds an element, so K
/// is a real element's key. False when no key qualifies.
template <bool kMass>
__device__ bool radix_select(const float* lg, uint32_t n, float mx, float temp, uint64_t lo,
                             unsigned long long target, bool strict, uint64_t& out, shared_state& sh) {
  uint64_t prefix = 0, mask = 0;
  unsigned long long above = 0;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (unsigned d = threadIdx.x; d < 256; d += blockDim.x) {
      sh.count[d] = 0;
      sh.mass[d] = 0;
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const uint64_t key = sort_key(lg[i], i);
      if (key < lo || (key & mask) != prefix) continue;
      const unsigned d = static_cast<unsigned>(key >> shift) & 255u;
      atomicAdd(&sh.count[d], 1u);
      if (kMass) atomicAdd(&sh.mass[d], static_cast<unsigned long long>(weight_fx(lg[i], mx, temp)));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long cum = above;
      int found = -1;
      for (int d = 255; d >= 0; --d) {
        if (sh.count[d] == 0) continue;
        const unsigned long long s = kMass ? sh.mass[d] : sh.count[d];
        const bool ok = kMass ? (strict ? cum + s > target : cum + s >= target) : cum + s >= target;
        if (ok) {
          found = d;
          break;
        }
        cum += s;
      }
      sh.found = found;
      sh.above = cum;
    }
    __syncthreads();
    const int found = sh.found;
    if (found < 0) return false;
    prefix |= static_cast<uint64_t>(found) << shift;
    mask |= static_cast<uint64_t>(0xff) << shift;
    above = sh.above;
    __syncthreads(); // everyone has read sh.found / sh.above before the next pass
  }
  out = prefix;
  return true;
}

/// Fixed-point mass of the elements with key >= lo.
__device__ unsigned long long mass_from(const float* lg, uint32_t n, float mx, float temp, uint64_t lo,
                                        shared_state& sh) {
  unsigned long long s = 0;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (sort_key(lg[i], i) >= lo) s += weight_fx(lg[i], mx, temp);
  }
  return block_sum_u64(s, sh);
}

/// The lowest id among the largest values (model::sampler::argmax).
__device__ uint32_t block_argmax(const float* lg, uint32_t n, shared_state& sh) {
  float best = -INFINITY;
  uint32_t best_id = 0xffffffffu;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (lg[i] > best || (lg[i] == best && i < best_id)) {
      best = lg[i];
      best_id = i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(detail::full_mask, best, o);
    const uint32_t id = __shfl_xor_sync(detail::full_mask, best_id, o);
    if (v > best || (v == best && id < best_id)) {
      best = v;
      best_id = id;
    }
  }
  __shared__ float vals[32];
  __shared__ uint32_t ids[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    vals[warp] = best;
    ids[warp] = best_id;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < blockDim.x / 32; ++w) {
      if (vals[w] > best || (vals[w] == best && ids[w] < best_id)) {
        best = vals[w];
        best_id = ids[w];
      }
    }
    sh.result = best_id == 0xffffffffu ? 0 : best_id; // all NaN: id 0
  }
  __syncthreads();
  return sh.result;
}

/// The log-softmax of row / t (double) for `chosen` and the k largest (k <= max_logprobs).
__device__ void write_logprobs(const float* lg, uint32_t n, float mx, double t, uint32_t chosen, uint32_t k,
                               sample_logprobs* out, shared_state& sh) {
  double z = 0.0;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
    z += exp((static_cast<double>(lg[i]) - static_cast<double>(mx)) / t);
  const double log_z = log(block_sum_double(z, sh));
  auto lp = [&](uint32_t i) {
    return static_cast<float>((static_cast<double>(lg[i]) - static_cast<double>(mx)) / t - log_z);
  };
  k = min(k, n);
  uint64_t kth = 0;
  if (k > 0) (void)radix_select<false>(lg, n, mx, 1.0f, 0, k, false, kth, sh); // the k-th largest key
  if (threadIdx.x == 0) sh.n_top = 0;
  __syncthreads();
  if (k > 0) {
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const uint64_t key = sort_key(lg[i], i);
      if (key < kth) continue;
      const uint32_t slot = atomicAdd(&sh.n_top, 1u); // exactly k: keys are distinct
      if (slot < max_logprobs) sh.top_keys[slot] = key;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint32_t m = min(sh.n_top, k);
    for (uint32_t i = 1; i < m; ++i) { // insertion sort, largest key first
      const unsigned long long key = sh.top_keys[i];
      uint32_t j = i;
      for (; j > 0 && sh.top_keys[j - 1] < key; --j) sh.top_keys[j] = sh.top_keys[j - 1];
      sh.top_keys[j] = key;
    }
    out->logprob = lp(chosen);
    out->n_top = m;
    for (uint32_t i = 0; i < m; ++i) {
      out->top_ids[i] = id_of(sh.top_keys[i]);
      out->top_logprobs[i] = lp(id_of(sh.top_keys[i]));
    }
  }
}

/// Lowest key among the candidates (key >= lo) with weight >= min_p: the
/// min_p cut (the largest logit's weight is 1, so one always qualifies).
__device__ uint64_t min_p_cut(const float* lg, uint32_t n, float mx, float temp, double min_p, uint64_t lo,
                              shared_state& sh) {
  unsigned long long m = ~0ull;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const uint64_t key = sort_key(lg[i], i);
    if (key >= lo && exp(static_cast<double>(lg[i] - mx) / static_cast<double>(temp)) >= min_p) m = min(m, static_cast<unsigned long long>(key));
  }
  m = block_min_u64(m, sh);
  return m == ~0ull ? lo : m;
}

/// The draw of a non-greedy row (uniform across the block).
__device__ uint32_t draw(const float* lg, uint32_t n, float mx, const sample_params& p, shared_state& sh) {
  const float temp = p.temperature;
  const bool top_k = p.top_k > 0 && static_cast<uint32_t>(p.top_k) < n;
  const double top_p = isfinite(p.top_p) ? fmin(fmax(static_cast<double>(p.top_p), 0.0), 1.0) : 1.0;
  const double min_p = isfinite(p.min_p) ? fmin(fmax(static_cast<double>(p.min_p), 0.0), 1.0) : 0.0;
  const bool filtered = top_k || top_p < 1.0 || min_p > 0.0;
  uint64_t lo = 0; // candidates: keys >= lo
  if (top_k) (void)radix_select<false>(lg, n, mx, temp, 0, static_cast<uint32_t>(p.top_k), false, lo, sh);
  if (min_p > 0.0) lo = max(lo, min_p_cut(lg, n, mx, temp, min_p, lo, sh));
  unsigned long long z = mass_from(lg, n, mx, temp, lo, sh);
  if (top_p < 1.0) {
    const auto target = static_cast<unsigned long long>(ceil(top_p * static_cast<double>(z)));
    uint64_t cut = lo;
    if (radix_select<true>(lg, n, mx, temp, lo, target, false, cut, sh)) lo = cut;
    z = mass_from(lg, n, mx, temp, lo, sh);
  }
  const double u = rng_uniform(p.seed, p.position);
  const auto target = static_cast<unsigned long long>(floor(u * static_cast<double>(z))); // < z
  if (filtered) {
    // First candidate in sorted order whose cumulative mass exceeds target;
    // the last kept one (key lo) when rounding leaves none.
    uint64_t key = lo;
    (void)radix_select<true>(lg, n, mx, temp, lo, target, true, key, sh);
    return id_of(key);
  }
  // Unfiltered: scan in id order. Each thread owns a contiguous chunk of ids.
  const uint32_t chunk = (n + blockDim.x - 1) / blockDim.x;
  const uint32_t b = min(n, threadIdx.x * chunk), e = min(n, b + chunk);
  unsigned long long s = 0;
  for (uint32_t i = b; i < e; ++i) s += weight_fx(lg[i], mx, temp);
  const unsigned long long before = block_exclusive_scan_u64(s, sh);
  if (threadIdx.x == 0) sh.result = n - 1; // u within rounding of 1
  __syncthreads();
  if (before <= target && target < before + s) {
    unsigned long long c = before;
    for (uint32_t i = b; i < e; ++i) {
      c += weight_fx(lg[i], mx, temp);
      if (c > target) {
        sh.result = i;
        break;
      }
    }
  }
  __syncthreads();
  const uint32_t id = sh.result;
  __syncthreads(); // everyone has read sh.result before it is reused
  return id;
}

__global__ void __launch_bounds__(threads) sample_kernel(sample_args a) {
  __shared__ shared_state sh;
  __shared__ float scratch[32];
  const uint32_t draw_index = blockIdx.x, n = a.n_vocab;
  const sample_params p = a.params[draw_index];
  const float* lg = a.logits + static_cast<size_t>(p.row) * a.logits_stride;
  const float temp = p.temperature;
  const bool greedy = !(temp > 0.0f) || !isfinite(temp) || p.top_k == 1;
  float mx = -INFINITY;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, lg[i]);
  mx = detail::block_max(mx, scratch);
  const uint32_t id = greedy ? block_argmax(lg, n, sh) : draw(lg, n, mx, p, sh);
  if (threadIdx.x == 0) a.out[draw_index] = id;
  if (p.num_logprobs < 0 || a.logprobs == nullptr) return;
  const double t = temp > 0.0f && isfinite(temp) ? static_cast<double>(temp) : 1.0;
  write_logprobs(lg, n, mx, t, id, min(static_cast<uint32_t>(p.num_logprobs), max_logprobs),
                 a.logprobs + draw_index, sh);
}

} // namespace

cudaError_t launch_sample(const sample_args& a, cudaStream_t stream) {
  if (a.n_rows == 0) return cudaSuccess;
  if (a.logits == nullptr || a.params == nullptr || a.out == nullptr || a.n_vocab == 0 ||
      a.logits_stride < a.n_vocab) {
    return cudaErrorInvalidValue;
  }
  sample_kernel<<<a.n_rows, threads, 0, stream>>>(a);
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
