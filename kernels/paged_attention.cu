#include "kernels/paged_attention.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

#include <mma.h>

#include <type_traits>

namespace dynamo::kernels::gpu {
namespace {

constexpr int n_threads = 128;           // 4 warps
constexpr int key_tile = 32;             // keys per tile: one per lane in the softmax step
constexpr int max_acc = 32;              // output values per thread: rows * head_dim <= 128 * 32
constexpr uint32_t max_rows_x_dim = n_threads * max_acc;
constexpr int max_group = 8;             // query heads per KV head (the launcher refuses more)

/// Query tokens one CTA may take: a run of consecutive positions of one
/// sequence, so every K/V tile is read once for all of them.
__host__ __device__ inline uint32_t query_tile(uint32_t group, uint32_t head_dim) {
  uint32_t qt = max_rows_x_dim / (group * head_dim);
  qt = qt > 16 ? 16 : (qt == 0 ? 1 : qt);
  while (qt & (qt - 1)) qt &= qt - 1; // a power of two, so tiles align to positions
  return qt;
}

/// Key range [begin, end) of partition `part` for keys below ctx.
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

/// One warp's online-softmax step for row r over a tile of 32 keys (lane = key):
/// folds the lane's score `s` (-inf when masked) into the row's max and sum,
/// records the factor that rescales the row's output, and returns the lane's
/// unnormalised probability. A row that has seen no key yet keeps m = -inf:
/// nothing to rescale or add.
__device__ __forceinline__ float softmax_step(float s, uint32_t r, uint32_t lane, float* row_m, float* row_l,
                                              float* row_scale) {
  const float m_old = row_m[r], m_new = fmaxf(m_old, detail::warp_max(s));
  const float p = m_new == -INFINITY ? 0.0f : expf(s - m_new);
  const float scale = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);
  const float sum = detail::warp_sum(p);
  if (lane == 0) {
    row_l[r] = row_l[r] * scale + sum;
    row_m[r] = m_new;
    row_scale[r] = scale;
  }
  return p;
}

/// Token t leads a query tile when it starts a run (another sequence or a
/// position gap before it) or sits on a tile boundary of positions. The tile
/// runs on while tokens continue the run, up to qt of them.
__device__ __forceinline__ uint32_t tile_length(const paged_attention_args& a, uint32_t t, uint32_t qt) {
  const uint32_t seq = a.token_seq[t], pos = a.positions[t];
  const bool starts_run = t == 0 || a.token_seq[t - 1] != seq || a.positions[t - 1] + 1 != pos;
  if (!starts_run && pos % qt != 0) return 0;
  uint32_t n = 1;
  while (n < qt && t + n < a.n_tokens && a.token_seq[t + n] == seq && a.positions[t + n] == pos + n &&
         (pos + n) % qt != 0) {
    ++n;
  }
  return n;
}

/// One tile of key_tile keys of K and V for one KV head, held in registers
/// between fetch (global loads) and stash (fp32 into shared memory). VEC: 16-byte
/// loads of 8 values (rows 16-byte aligned, head_dim % 8 == 0); else one value each.
template <bool VEC>
struct kv_tile_loader {
  static constexpr uint32_t width = VEC ? 8 : 1;                          // values per load
  static constexpr uint32_t max_loads = key_tile * 256 / width / n_threads; // per thread, head_dim <= 256
  using word = std::conditional_t<VEC, uint4, __nv_bfloat16>;
  word k[max_loads], v[max_loads];
  uint32_t tile_keys = 0;

  __device__ __forceinline__ void fetch(const paged_attention_args& a, const uint32_t* table, uint32_t kvh,
                                        uint32_t tile, uint32_t end) {
    const uint32_t D = a.kv.head_dim, n = key_tile * D / width;
    tile_keys = min(key_tile, end - tile);
#pragma unroll
    for (uint32_t c = 0; c < max_loads; ++c) {
      const uint32_t e = threadIdx.x + c * n_threads;
      if (e >= n) break;
      const uint32_t j = e * width / D, d = e * width % D;
      if (j < tile_keys) {
        const uint32_t key = tile + j;
        const size_t off = kv_offset(a.kv, table[key / a.kv.block_size], key % a.kv.block_size, kvh) + d;
        k[c] = *reinterpret_cast<const word*>(a.kv.k + off);
        v[c] = *reinterpret_cast<const word*>(a.kv.v + off);
      }
    }
  }

  /// VEC only: the bf16 rows as loaded, `stride` elements apart (a multiple of 8).
  __device__ __forceinline__ void stash_bf16(uint32_t D, uint32_t stride, __nv_bfloat16* ks,
                                             __nv_bfloat16* vs) const {
    const uint32_t n = key_tile * D / width;
#pragma unroll
    for (uint32_t c = 0; c < max_loads; ++c) {
      const uint32_t e = threadIdx.x + c * n_threads;
      if (e >= n) break;
      const uint32_t j = e * width / D, d = e * width % D;
      const bool live = j < tile_keys;
      *reinterpret_cast<uint4*>(ks + j * stride + d) = live ? k[c] : make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(vs + j * stride + d) = live ? v[c] : make_uint4(0, 0, 0, 0);
    }
  }

  __device__ __forceinline__ void stash(uint32_t D, uint32_t KS, float* ks, float* vs) const {
    const uint32_t n = key_tile * D / width;
#pragma unroll
    for (uint32_t c = 0; c < max_loads; ++c) {
      const uint32_t e = threadIdx.x + c * n_threads;
      if (e >= n) break;
      const uint32_t j = e * width / D, d = e * width % D;
      const bool live = j < tile_keys; // keys past the end read as zeros
      if constexpr (VEC) {
        const auto* kh = reinterpret_cast<const __nv_bfloat16*>(&k[c]);
        const auto* vh = reinterpret_cast<const __nv_bfloat16*>(&v[c]);
#pragma unroll
        for (uint32_t i = 0; i < width; ++i) {
          ks[j * KS + d + i] = live ? __bfloat162float(kh[i]) : 0.0f;
          vs[j * KS + d + i] = live ? __bfloat162float(vh[i]) : 0.0f;
        }
      } else {
        ks[j * KS + d] = live ? __bfloat162float(k[c]) : 0.0f;
        vs[j * KS + d] = live ? __bfloat162float(v[c]) : 0.0f;
      }
    }
  }
};

// One CTA per (query tile, KV head[, partition]). Rows r = token i of the tile
// x query head g of the group (r = i * group + g). Per tile of 32 keys: K and V
// go to shared memory as fp32, every thread scores (row, key) pairs, one warp
// per row updates the online softmax, and each thread folds P.V into the
// output values it owns (value e = row e / D, dim e % D: coalesced).
template <bool VEC>
__global__ void __launch_bounds__(n_threads) attention_kernel(paged_attention_args a, uint32_t qt) {
  extern __shared__ float smem[];
  const uint32_t t0 = blockIdx.x, kvh = blockIdx.y, part = blockIdx.z;
  const uint32_t nq = tile_length(a, t0, qt);
  if (nq == 0) return;
  const uint32_t D = a.kv.head_dim, KS = D + 1; // K/V rows padded: scoring reads columns of ks
  const uint32_t group = a.n_head / a.kv.n_kv_head, h0 = kvh * group, R = nq * group;
  const uint32_t ctx = a.positions[t0 + nq - 1] + 1;
  uint32_t begin, end;
  key_range(a, ctx, part, begin, end);
  if (begin >= end) return; // an empty partition: the merge kernel never reads it

  float* qs = smem;                        // [R][D], pre-scaled
  float* ks = qs + max_rows_x_dim;         // [key_tile][KS]
  float* vs = ks + key_tile * KS;          // [key_tile][KS]
  float* sc = vs + key_tile * KS;          // [R][key_tile] scores, then probabilities
  float* row_m = sc + R * key_tile;        // [R]
  float* row_l = row_m + R;
  float* row_scale = row_l + R;

  for (uint32_t e = threadIdx.x; e < R * D; e += n_threads) {
    const uint32_t r = e / D, d = e % D, i = r / group, g = r % group;
    qs[e] = __bfloat162float(a.q[static_cast<size_t>(t0 + i) * a.q_stride + static_cast<size_t>(h0 + g) * D + d]) *
            a.scale;
  }
  for (uint32_t r = threadIdx.x; r < R; r += n_threads) {
    row_m[r] = -INFINITY;
    row_l[r] = 0.0f;
  }
  float acc[max_acc];
#pragma unroll
  for (int k = 0; k < max_acc; ++k) acc[k] = 0.0f;

  const uint32_t* table = a.block_tables + static_cast<size_t>(a.token_seq[t0]) * a.block_table_stride;
  const uint32_t pos0 = a.positions[t0];
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // K/V tiles travel through registers: the next tile's loads are issued
  // before this tile is scored, so their latency hides behind the math.
  kv_tile_loader<VEC> loader;
  loader.fetch(a, table, kvh, begin, end);
  for (uint32_t tile = begin; tile < end; tile += key_tile) {
    loader.stash(D, KS, ks, vs);
    __syncthreads();
    if (tile + key_tile < end) loader.fetch(a, table, kvh, tile + key_tile, end);
    for (uint32_t p = threadIdx.x; p < R * key_tile; p += n_threads) {
      const uint32_t r = p / key_tile, j = p % key_tile, key = tile + j;
      float s = -INFINITY;
      if (key < end && key <= pos0 + r / group) { // causal: row r's token sits at pos0 + r / group
        const float* qr = qs + r * D;
        const float* kr = ks + j * KS;
        s = 0.0f;
#pragma unroll 8
        for (uint32_t d = 0; d < D; ++d) s += qr[d] * kr[d];
      }
      sc[p] = s;
    }
    __syncthreads();
    for (uint32_t r = warp; r < R; r += n_threads / 32) {
      sc[r * key_tile + lane] = softmax_step(sc[r * key_tile + lane], r, lane, row_m, row_l, row_scale);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < max_acc; ++k) {
      const uint32_t e = threadIdx.x + k * n_threads;
      if (e < R * D) {
        const uint32_t r = e / D, d = e % D;
        const float* pr = sc + r * key_tile;
        float v = acc[k] * row_scale[r];
#pragma unroll 8
        for (uint32_t j = 0; j < key_tile; ++j) v += pr[j] * vs[j * KS + d];
        acc[k] = v;
      }
    }
    __syncthreads(); // the next tile overwrites ks, vs and sc
  }

#pragma unroll
  for (int k = 0; k < max_acc; ++k) {
    const uint32_t e = threadIdx.x + k * n_threads;
    if (e < R * D) {
      const uint32_t r = e / D, d = e % D, t = t0 + r / group, h = h0 + r % group;
      if (a.partition_size == 0) {
        a.out[static_cast<size_t>(t) * a.out_stride + static_cast<size_t>(h) * D + d] =
            __float2bfloat16_rn(acc[k] / row_l[r]);
      } else {
        // A row with no key in this partition writes m = -inf, l = 0; the merge
        // reads only partitions that start below the token's own context.
        float* ws = a.workspace + ((static_cast<size_t>(t) * a.n_head + h) * a.max_partitions + part) * (D + 2);
        ws[d] = acc[k];
        if (d == 0) {
          ws[D] = row_m[r];
          ws[D + 1] = row_l[r];
        }
      }
    }
  }
}

size_t attention_smem_bytes(uint32_t head_dim, uint32_t rows) {
  return sizeof(float) * (max_rows_x_dim + 2 * key_tile * (head_dim + 1) + rows * key_tile + 3 * rows);
}

// Prefill attention on tensor cores (bf16 WMMA 16x16x16, fp32 accumulate): the
// query-tile kernel's structure with S = Q.K^T and P.V as matrix products. Rows
// are padded to 16; P is rounded to bf16 for the second product (as
// FlashAttention does), the softmax statistics stay fp32. One pass (no split).
// Needs 16-byte aligned rows and head_dim % 16 == 0, head_dim <= 128.
constexpr uint32_t mma_max_d = 128;

__host__ __device__ inline uint32_t pad16(uint32_t n) { return (n + 15) / 16 * 16; }
__host__ __device__ inline size_t align128(size_t bytes) { return (bytes + 127) / 128 * 128; }

struct mma_smem_layout {
  size_t q, k, v, s, p, pv, stats, total; // byte offsets
  __host__ __device__ mma_smem_layout(uint32_t D, uint32_t max_rows) {
    const size_t rp = pad16(max_rows), st = D + 8;
    q = 0;
    k = q + align128(rp * st * 2);
    v = k + align128(key_tile * st * 2);
    s = v + align128(key_tile * st * 2);
    p = s + align128(rp * key_tile * 4);
    pv = p + align128(rp * (key_tile + 8) * 2);
    stats = pv + align128(rp * D * 4);
    total = stats + align128(3 * rp * 4);
  }
};

__global__ void __launch_bounds__(n_threads) attention_prefill_mma_kernel(paged_attention_args a, uint32_t qt) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const uint32_t t0 = blockIdx.x, kvh = blockIdx.y;
  const uint32_t nq = tile_length(a, t0, qt);
  if (nq == 0) return;
  const uint32_t D = a.kv.head_dim, group = a.n_head / a.kv.n_kv_head, h0 = kvh * group, R = nq * group;
  const uint32_t RP = pad16(R), ST = D + 8, PS = key_tile + 8;
  const uint32_t end = a.positions[t0 + nq - 1] + 1;
  const mma_smem_layout lay(D, qt * group);
  auto* qs = reinterpret_cast<__nv_bfloat16*>(smem_raw + lay.q);
  auto* ks = reinterpret_cast<__nv_bfloat16*>(smem_raw + lay.k);
  auto* vs = reinterpret_cast<__nv_bfloat16*>(smem_raw + lay.v);
  auto* sc = reinterpret_cast<float*>(smem_raw + lay.s);
  auto* ps = reinterpret_cast<__nv_bfloat16*>(smem_raw + lay.p);
  auto* pv = reinterpret_cast<float*>(smem_raw + lay.pv);
  float* row_m = reinterpret_cast<float*>(smem_raw + lay.stats);
  float* row_l = row_m + RP;
  float* row_scale = row_l + RP;

  for (uint32_t e = threadIdx.x; e < RP * D; e += n_threads) {
    const uint32_t r = e / D, d = e % D, i = r / group, g = r % group;
    qs[r * ST + d] = r < R ? a.q[static_cast<size_t>(t0 + i) * a.q_stride + static_cast<size_t>(h0 + g) * D + d]
                           : __float2bfloat16_rn(0.0f);
  }
  for (uint32_t e = threadIdx.x; e < RP * PS; e += n_threads) ps[e] = __float2bfloat16_rn(0.0f);
  for (uint32_t r = threadIdx.x; r < RP; r += n_threads) {
    row_m[r] = -INFINITY;
    row_l[r] = 0.0f;
  }
  float acc[max_acc];
#pragma unroll
  for (int k = 0; k < max_acc; ++k) acc[k] = 0.0f;

  const uint32_t* table = a.block_tables + static_cast<size_t>(a.token_seq[t0]) * a.block_table_stride;
  const uint32_t pos0 = a.positions[t0];
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = n_threads / 32;
  kv_tile_loader<true> loader;
  loader.fetch(a, table, kvh, 0, end);
  for (uint32_t tile = 0; tile < end; tile += key_tile) {
    loader.stash_bf16(D, ST, ks, vs);
    __syncthreads();
    if (tile + key_tile < end) loader.fetch(a, table, kvh, tile + key_tile, end);
    // S = Q . K^T (RP x key_tile), one 16x16 output tile per warp at a time.
    for (uint32_t w = warp; w < (RP / 16) * (key_tile / 16); w += n_warps) {
      const uint32_t ti = w / (key_tile / 16), tj = w % (key_tile / 16);
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::fill_fragment(c, 0.0f);
      for (uint32_t k0 = 0; k0 < D; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, qs + ti * 16 * ST + k0, ST);
        wmma::load_matrix_sync(fb, ks + tj * 16 * ST + k0, ST);
        wmma::mma_sync(c, fa, fb, c);
      }
      wmma::store_matrix_sync(sc + ti * 16 * key_tile + tj * 16, c, key_tile, wmma::mem_row_major);
    }
    __syncthreads();
    for (uint32_t r = warp; r < R; r += n_warps) {
      const uint32_t key = tile + lane;
      const bool ok = key < end && key <= pos0 + r / group;
      const float s = ok ? sc[r * key_tile + lane] * a.scale : -INFINITY;
      ps[r * PS + lane] = __float2bfloat16_rn(softmax_step(s, r, lane, row_m, row_l, row_scale));
    }
    __syncthreads();
    // PV = P . V (RP x D).
    for (uint32_t w = warp; w < (RP / 16) * (D / 16); w += n_warps) {
      const uint32_t ti = w / (D / 16), tj = w % (D / 16);
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::fill_fragment(c, 0.0f);
#pragma unroll
      for (uint32_t k0 = 0; k0 < key_tile; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, ps + ti * 16 * PS + k0, PS);
        wmma::load_matrix_sync(fb, vs + k0 * ST + tj * 16, ST);
        wmma::mma_sync(c, fa, fb, c);
      }
      wmma::store_matrix_sync(pv + ti * 16 * D + tj * 16, c, D, wmma::mem_row_major);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < max_acc; ++k) {
      const uint32_t e = threadIdx.x + k * n_threads;
      if (e < R * D) {
        const uint32_t r = e / D;
        acc[k] = acc[k] * row_scale[r] + pv[e];
      }
    }
    __syncthreads(); // the next tile overwrites ks, vs, sc, ps and pv
  }
#pragma unroll
  for (int k = 0; k < max_acc; ++k) {
    const uint32_t e = threadIdx.x + k * n_threads;
    if (e < R * D) {
      const uint32_t r = e / D, d = e % D, t = t0 + r / group, h = h0 + r % group;
      a.out[static_cast<size_t>(t) * a.out_stride + static_cast<size_t>(h) * D + d] =
          __float2bfloat16_rn(acc[k] / row_l[r]);
    }
  }
}

// Decode attention: one CTA per (token, KV head, partition), for steps whose
// tokens each need only their own keys (split-K steps). Each warp takes its own
// chunks of 32 keys, one key per lane: a lane loads its key's K and V rows with
// 16-byte loads, scores the key against every query head of the group (q from
// shared memory), the warp keeps an online softmax per head, and P.V runs with
// the lanes over the head dimension (lane l owns dims [l * VPL, l * VPL + VPL))
// reading V and P from the warp's own shared buffers. No block-wide barrier
// inside the key loop; the four warps merge at the end.
template <int VPL>
struct decode_smem {
  static constexpr int max_d = 32 * VPL, vs = max_d + 8; // V rows padded by 16 bytes
  static constexpr size_t q_bytes = sizeof(float) * max_group * max_d;
  static constexpr size_t v_bytes = 2 * (n_threads / 32) * 32 * vs;
  static constexpr size_t acc_bytes = sizeof(float) * (n_threads / 32) * max_group * max_d;
  static constexpr size_t p_bytes = sizeof(float) * (n_threads / 32) * max_group * 32;
  static constexpr size_t big = v_bytes > acc_bytes ? v_bytes : acc_bytes; // V staging, then the merge
  static constexpr size_t total = q_bytes + big + p_bytes;
};

template <int VPL>
__global__ void __launch_bounds__(n_threads) attention_decode_kernel(paged_attention_args a) {
  using L = decode_smem<VPL>;
  constexpr int max_d = L::max_d, VS = L::vs, n_warps = n_threads / 32;
  __shared__ __align__(16) unsigned char raw[L::total];
  __shared__ float sm_m[n_warps][max_group];
  __shared__ float sm_l[n_warps][max_group];
  auto& q_s = *reinterpret_cast<float(*)[max_group][max_d]>(raw);
  auto& v_s = *reinterpret_cast<__nv_bfloat16(*)[n_warps][32][VS]>(raw + L::q_bytes);
  auto& sm_acc = *reinterpret_cast<float(*)[n_warps][max_group][max_d]>(raw + L::q_bytes); // after the loop
  auto& p_s = *reinterpret_cast<float(*)[n_warps][max_group][32]>(raw + L::q_bytes + L::big);

  const uint32_t t = blockIdx.x, kvh = blockIdx.y, part = blockIdx.z;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t D = a.kv.head_dim, group = a.n_head / a.kv.n_kv_head, h0 = kvh * group;
  const uint32_t ctx = a.positions[t] + 1;
  uint32_t begin, end;
  key_range(a, ctx, part, begin, end);
  if (begin >= end) return;

  for (uint32_t e = threadIdx.x; e < group * D; e += n_threads) {
    const uint32_t g = e / D, d = e % D;
    q_s[g][d] = __bfloat162float(a.q[static_cast<size_t>(t) * a.q_stride + static_cast<size_t>(h0 + g) * D + d]) *
                a.scale;
  }
  __syncthreads();

  const uint32_t* table = a.block_tables + static_cast<size_t>(a.token_seq[t]) * a.block_table_stride;
  float m[max_group], l[max_group], acc[max_group][VPL];
#pragma unroll
  for (int g = 0; g < max_group; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) acc[g][i] = 0.0f;
  }
  const uint32_t d0 = lane * VPL;
  __nv_bfloat16* my_v = v_s[warp][lane];
  for (uint32_t chunk = begin + warp * 32; chunk < end; chunk += n_warps * 32) {
    const uint32_t key = chunk + lane;
    const bool live = key < end;
    float s[max_group];
#pragma unroll
    for (int g = 0; g < max_group; ++g) s[g] = 0.0f;
    if (live) {
      const size_t row = kv_offset(a.kv, table[key / a.kv.block_size], key % a.kv.block_size, kvh);
      const __nv_bfloat16* k = a.kv.k + row;
      const __nv_bfloat16* v = a.kv.v + row;
#pragma unroll 4
      for (uint32_t d = 0; d < D; d += 8) {
        const uint4 kw = *reinterpret_cast<const uint4*>(k + d);
        *reinterpret_cast<uint4*>(my_v + d) = *reinterpret_cast<const uint4*>(v + d);
        const auto* kh = reinterpret_cast<const __nv_bfloat16*>(&kw);
        float kf[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) kf[i] = __bfloat162float(kh[i]);
#pragma unroll
        for (int g = 0; g < max_group; ++g) {
          if (g < group) {
#pragma unroll
            for (int i = 0; i < 8; ++i) s[g] += q_s[g][d + i] * kf[i];
          }
        }
      }
    }
    // Per head: the chunk's max, rescale, probabilities into the warp's P buffer.
#pragma unroll
    for (int g = 0; g < max_group; ++g) {
      if (g < group) {
        const float sg = live ? s[g] : -INFINITY;
        const float m_new = fmaxf(m[g], detail::warp_max(sg));
        const float scale = expf(m[g] - m_new); // m_new is finite: the chunk has a live key
        const float p = live ? expf(sg - m_new) : 0.0f;
        l[g] = l[g] * scale + detail::warp_sum(p);
        m[g] = m_new;
        p_s[warp][g][lane] = p;
#pragma unroll
        for (int i = 0; i < VPL; ++i) acc[g][i] *= scale;
      }
    }
    __syncwarp();
    const uint32_t n_live = min(32u, end - chunk);
    if (d0 < D) {
#pragma unroll 4
      for (uint32_t j = 0; j < n_live; ++j) {
        float vf[VPL];
#pragma unroll
        for (int i = 0; i < VPL; i += 2) {
          const __nv_bfloat162 v2 = *reinterpret_cast<const __nv_bfloat162*>(&v_s[warp][j][d0 + i]);
          vf[i] = __low2float(v2);
          vf[i + 1] = __high2float(v2);
        }
#pragma unroll
        for (int g = 0; g < max_group; ++g) {
          if (g < group) {
            const float pj = p_s[warp][g][j];
#pragma unroll
            for (int i = 0; i < VPL; ++i) acc[g][i] += pj * vf[i];
          }
        }
      }
    }
    __syncwarp(); // the next chunk overwrites this warp's V and P buffers
  }
  __syncthreads(); // V staging becomes the merge buffer

  // Merge the warps: weights exp(m_w - M).
#pragma unroll
  for (int g = 0; g < max_group; ++g) {
    if (g < group) {
      if (lane == 0) {
        sm_m[warp][g] = m[g];
        sm_l[warp][g] = l[g];
      }
#pragma unroll
      for (int i = 0; i < VPL; ++i) sm_acc[warp][g][d0 + i] = acc[g][i];
    }
  }
  __syncthreads();
  for (uint32_t e = threadIdx.x; e < group * D; e += n_threads) {
    const uint32_t g = e / D, d = e % D;
    float M = -INFINITY;
    for (int w = 0; w < n_warps; ++w) M = fmaxf(M, sm_m[w][g]);
    float Lsum = 0.0f, A = 0.0f;
    for (int w = 0; w < n_warps; ++w) {
      if (sm_m[w][g] == -INFINITY) continue; // a warp that saw no key
      const float f = expf(sm_m[w][g] - M);
      Lsum += sm_l[w][g] * f;
      A += sm_acc[w][g][d] * f;
    }
    const uint32_t h = h0 + g;
    if (a.partition_size == 0) {
      a.out[static_cast<size_t>(t) * a.out_stride + static_cast<size_t>(h) * D + d] = __float2bfloat16_rn(A / Lsum);
    } else {
      float* ws = a.workspace + ((static_cast<size_t>(t) * a.n_head + h) * a.max_partitions + part) * (D + 2);
      ws[d] = A;
      if (d == 0) {
        ws[D] = M;
        ws[D + 1] = Lsum;
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
  const uint32_t group = a.n_head / nkv, qt = query_tile(group, D);
  // 16-byte K/V loads need every row start aligned: head_dim, the block stride
  // and the base pointers decide.
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = aligned(a.kv.k) && aligned(a.kv.v) && D % 8 == 0 && a.kv.block_stride % 8 == 0;
  const dim3 grid(a.n_tokens, nkv, split ? a.max_partitions : 1);
  // Split steps are decode steps. With many of them (or long contexts, which
  // split into many partitions) the warp-per-chunk kernel wins; a handful of
  // short decodes leaves its warps idle, and the query-tile kernel is faster.
  if (split && vec && D <= 128 && uint64_t(a.n_tokens) * nkv >= a.decode_kernel_min_rows) {
    if (D <= 64) {
      attention_decode_kernel<2><<<grid, n_threads, 0, stream>>>(a);
    } else {
      attention_decode_kernel<4><<<grid, n_threads, 0, stream>>>(a);
    }
  } else if (!split && vec && D % 16 == 0 && D <= mma_max_d) {
    const size_t mma_smem = mma_smem_layout(D, qt * group).total;
    if (mma_smem > 48 * 1024) {
      DYNAMO_CUDA_TRY(cudaFuncSetAttribute(attention_prefill_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(mma_smem)));
    }
    attention_prefill_mma_kernel<<<grid, n_threads, mma_smem, stream>>>(a, qt);
  } else {
    const auto kernel = vec ? attention_kernel<true> : attention_kernel<false>;
    const size_t smem = attention_smem_bytes(D, qt * group);
    if (smem > 48 * 1024) {
      DYNAMO_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    }
    kernel<<<grid, n_threads, smem, stream>>>(a, qt);
  }
  DYNAMO_CUDA_TRY(last_launch_error());
  if (split) {
    attention_merge_kernel<<<dim3(a.n_tokens, a.n_head), 128, 0, stream>>>(a);
    DYNAMO_CUDA_TRY(last_launch_error());
  }
  return cudaSuccess;
}

} // namespace dynamo::kernels::gpu
