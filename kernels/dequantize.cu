#include "kernels/dequantize.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

using ref::tensor_type;

__device__ __forceinline__ float half_bits(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float bf16_bits(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }

// Writes the 32 values of group `g` of a row (elements [32g, 32g + 32)) into y.
// Every supported type splits into such groups: one Q4_0/Q4_1/Q8_0 block,
// one 32-element sub-block of a Q4_K/Q6_K super-block, or 32 plain values.
__device__ void dequant_group(tensor_type type, const uint8_t* row, uint32_t g, float* y) {
  switch (type) {
    case tensor_type::f32: {
      const float* p = reinterpret_cast<const float*>(row) + 32 * g;
      for (int j = 0; j < 32; ++j) y[j] = p[j];
      return;
    }
    case tensor_type::f16:
    case tensor_type::bf16: {
      const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + 32 * g;
      for (int j = 0; j < 32; ++j) y[j] = type == tensor_type::f16 ? half_bits(p[j]) : bf16_bits(p[j]);
      return;
    }
    case tensor_type::q4_0: {
      const auto* b = reinterpret_cast<const ref::block_q4_0*>(row) + g;
      const float d = half_bits(b->d);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>((b->qs[j] & 0x0f) - 8);
        y[j + 16] = d * static_cast<float>((b->qs[j] >> 4) - 8);
      }
      return;
    }
    case tensor_type::q4_1: {
      const auto* b = reinterpret_cast<const ref::block_q4_1*>(row) + g;
      const float d = half_bits(b->d), m = half_bits(b->m);
      for (int j = 0; j < 16; ++j) {
        y[j] = __fadd_rn(__fmul_rn(d, static_cast<float>(b->qs[j] & 0x0f)), m);
        y[j + 16] = __fadd_rn(__fmul_rn(d, static_cast<float>(b->qs[j] >> 4)), m);
      }
      return;
    }
    case tensor_type::q8_0: {
      const auto* b = reinterpret_cast<const ref::block_q8_0*>(row) + g;
      const float d = half_bits(b->d);
      for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(b->qs[j]);
      return;
    }
    case tensor_type::q4_k: {
      // Sub-block j of super-block g / 8: chunk c = j / 2 uses qs[32c, 32c + 32);
      // even j takes the low nibbles, odd j the high ones (ggml get_scale_min_k4).
      const auto* b = reinterpret_cast<const ref::block_q4_k*>(row) + g / 8;
      const int j = static_cast<int>(g % 8);
      const uint8_t* s = b->scales;
      uint8_t sc, m;
      if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
      } else {
        sc = static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
      }
      const float dd = __fmul_rn(half_bits(b->d), sc), o = __fmul_rn(half_bits(b->dmin), m);
      const uint8_t* q = b->qs + 32 * (j / 2);
      const int shift = (j % 2) * 4;
      for (int l = 0; l < 32; ++l) y[l] = __fsub_rn(__fmul_rn(dd, static_cast<float>((q[l] >> shift) & 0x0f)), o);
      return;
    }
    case tensor_type::q6_k: {
      // Group j of super-block g / 8: half h = j / 4 (128 values), quadrant
      // qd = j % 4 of that half: y[l + 32 qd] for l < 32 (ggml dequantize_row_q6_K).
      const auto* b = reinterpret_cast<const ref::block_q6_k*>(row) + g / 8;
      const int j = static_cast<int>(g % 8), h = j / 4, qd = j % 4;
      const float d = half_bits(b->d);
      const uint8_t* ql = b->ql + 64 * h;
      const uint8_t* qh = b->qh + 32 * h;
      const int8_t* sc = b->scales + 8 * h;
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = qd % 2 == 0 ? ql[l] : ql[l + 32];
        const int nib = qd < 2 ? (lo & 0x0f) : (lo >> 4);
        const int q = (nib | (((qh[l] >> (2 * qd)) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[l / 16 + 2 * qd] * q);
      }
      return;
    }
  }
}

template <class T>
__global__ void dequantize_kernel(tensor_type type, const uint8_t* __restrict__ src, size_t src_row_bytes,
                                  uint32_t n_rows, uint32_t groups_per_row, T* __restrict__ dst, size_t dst_stride) {
  const uint64_t id = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= static_cast<uint64_t>(n_rows) * groups_per_row) return;
  const uint32_t r = static_cast<uint32_t>(id / groups_per_row), g = static_cast<uint32_t>(id % groups_per_row);
  float y[32];
  dequant_group(type, src + r * src_row_bytes, g, y);
  T* out = dst + r * dst_stride + 32 * static_cast<size_t>(g);
  for (int j = 0; j < 32; ++j) out[j] = detail::from_float<T>(y[j]);
}

bool known(tensor_type t) {
  switch (t) {
    case tensor_type::f32:
    case tensor_type::f16:
    case tensor_type::bf16:
    case tensor_type::q4_0:
    case tensor_type::q4_1:
    case tensor_type::q8_0:
    case tensor_type::q4_k:
    case tensor_type::q6_k: return true;
    default: return false;
  }
}

} // namespace

cudaError_t launch_dequantize(const dequantize_args& a, cudaStream_t stream) {
  if (a.n_rows == 0 || a.k == 0) return cudaSuccess;
  if (!known(a.type)) return cudaErrorInvalidValue;
  // Every type is processed in groups of 32 values; 32 divides all block sizes.
  const auto rb = ref::row_bytes(a.type, a.k);
  if (a.src == nullptr || a.dst == nullptr || !rb || a.k % 32 != 0 || a.dst_stride < a.k) {
    return cudaErrorInvalidValue;
  }
  const uint32_t groups = a.k / 32;
  constexpr unsigned threads = 128;
  const unsigned blocks = detail::div_up(static_cast<uint64_t>(a.n_rows) * groups, threads);
  const auto* src = static_cast<const uint8_t*>(a.src);
  if (a.dst_type == half_type::bf16) {
    dequantize_kernel<<<blocks, threads, 0, stream>>>(a.type, src, *rb, a.n_rows, groups,
                                                      static_cast<__nv_bfloat16*>(a.dst), a.dst_stride);
  } else {
    dequantize_kernel<<<blocks, threads, 0, stream>>>(a.type, src, *rb, a.n_rows, groups,
                                                      static_cast<__half*>(a.dst), a.dst_stride);
  }
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
