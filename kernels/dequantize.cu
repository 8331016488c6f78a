#include "kernels/dequantize.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_common.cuh"

namespace dynamo::kernels::gpu {
namespace {

using ref::tensor_type;

__device__ __forceinline__ float half_bits(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float bf16_bits(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }

/// The IQ4_NL levels, passed by value to the kernel (constant memory), from
/// the one table in kernels/reference/tensor_type.hpp.
struct iq4_levels {
  int8_t v[16];
};

/// Q4_K / Q5_K sub-block j = g % 8 of super-block g / 8: chunk j / 2 of qs,
/// low nibbles for even j, high for odd, plus bit j of qh[l] as bit 4 for Q5_K.
template <class Block>
__device__ void dequant_k4_group(const uint8_t* row, uint32_t g, float* y) {
  const auto* b = reinterpret_cast<const Block*>(row) + g / 8;
  const uint32_t j = g % 8;
  uint8_t sc, m;
  ref::scale_min_k4(j, b->scales, sc, m);
  const float dd = __fmul_rn(half_bits(b->d), sc), o = __fmul_rn(half_bits(b->dmin), m);
  const uint8_t* q = b->qs + 32 * (j / 2);
  const int shift = (j % 2) * 4;
  for (int l = 0; l < 32; ++l) {
    int v = (q[l] >> shift) & 0x0f;
    if constexpr (sizeof(Block) == sizeof(ref::block_q5_k)) v |= ((b->qh[l] >> j) & 1) << 4;
    y[l] = __fsub_rn(__fmul_rn(dd, static_cast<float>(v)), o);
  }
}

/// Bits 4 of a Q5_0/Q5_1 block's 32 elements (little-endian qh).
__device__ __forceinline__ uint32_t q5_high_bits(const uint8_t* qh) {
  return uint32_t(qh[0]) | (uint32_t(qh[1]) << 8) | (uint32_t(qh[2]) << 16) | (uint32_t(qh[3]) << 24);
}

// Writes the 32 values of group `g` of a row (elements [32g, 32g + 32)) into y.
// Every supported type splits into such groups: one 32-value block, one
// 32-element sub-block of a 256-value super-block, or 32 plain values. The
// arithmetic is the CPU reference's (kernels/reference/dequantize.cpp) with
// explicit rounding, so nvcc cannot contract it into different FMAs.
__device__ void dequant_group(tensor_type type, const uint8_t* row, uint32_t g, const iq4_levels& iq4, float* y) {
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
    case tensor_type::q5_0: {
      const auto* b = reinterpret_cast<const ref::block_q5_0*>(row) + g;
      const float d = half_bits(b->d);
      const uint32_t h = q5_high_bits(b->qh);
      for (int j = 0; j < 16; ++j) {
        const int q0 = (b->qs[j] & 0x0f) | static_cast<int>(((h >> j) & 1u) << 4);
        const int q1 = (b->qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4);
        y[j] = d * static_cast<float>(q0 - 16);
        y[j + 16] = d * static_cast<float>(q1 - 16);
      }
      return;
    }
    case tensor_type::q5_1: {
      const auto* b = reinterpret_cast<const ref::block_q5_1*>(row) + g;
      const float d = half_bits(b->d), m = half_bits(b->m);
      const uint32_t h = q5_high_bits(b->qh);
      for (int j = 0; j < 16; ++j) {
        const int q0 = (b->qs[j] & 0x0f) | static_cast<int>(((h >> j) & 1u) << 4);
        const int q1 = (b->qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4);
        y[j] = __fadd_rn(__fmul_rn(d, static_cast<float>(q0)), m);
        y[j + 16] = __fadd_rn(__fmul_rn(d, static_cast<float>(q1)), m);
      }
      return;
    }
    case tensor_type::q8_0: {
      const auto* b = reinterpret_cast<const ref::block_q8_0*>(row) + g;
      const float d = half_bits(b->d);
      for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(b->qs[j]);
      return;
    }
    case tensor_type::q4_k: dequant_k4_group<ref::block_q4_k>(row, g, y); return;
    case tensor_type::q5_k: dequant_k4_group<ref::block_q5_k>(row, g, y); return;
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
    case tensor_type::iq4_nl: {
      const auto* b = reinterpret_cast<const ref::block_iq4_nl*>(row) + g;
      const float d = half_bits(b->d);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>(iq4.v[b->qs[j] & 0x0f]);
        y[j + 16] = d * static_cast<float>(iq4.v[b->qs[j] >> 4]);
      }
      return;
    }
    case tensor_type::iq4_xs: {
      const auto* b = reinterpret_cast<const ref::block_iq4_xs*>(row) + g / 8;
      const uint32_t j = g % 8;
      const int ls = ((b->scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((b->scales_h >> (2 * j)) & 3) << 4);
      const float dl = half_bits(b->d) * static_cast<float>(ls - 32);
      const uint8_t* qs = b->qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * static_cast<float>(iq4.v[qs[l] & 0x0f]);
        y[l + 16] = dl * static_cast<float>(iq4.v[qs[l] >> 4]);
      }
      return;
    }
  }
}

template <class T>
__global__ void dequantize_kernel(tensor_type type, const uint8_t* __restrict__ src, size_t src_row_bytes,
                                  uint32_t n_rows, uint32_t groups_per_row, T* __restrict__ dst, size_t dst_stride,
                                  iq4_levels iq4) {
  const uint64_t id = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= static_cast<uint64_t>(n_rows) * groups_per_row) return;
  const uint32_t r = static_cast<uint32_t>(id / groups_per_row), g = static_cast<uint32_t>(id % groups_per_row);
  float y[32];
  dequant_group(type, src + r * src_row_bytes, g, iq4, y);
  T* out = dst + r * dst_stride + 32 * static_cast<size_t>(g);
  for (int j = 0; j < 32; ++j) out[j] = detail::from_float<T>(y[j]);
}

} // namespace

cudaError_t launch_dequantize(const dequantize_args& a, cudaStream_t stream) {
  if (a.n_rows == 0 || a.k == 0) return cudaSuccess;
  if (!ref::is_computed(a.type)) return cudaErrorInvalidValue;
  // Every type is processed in groups of 32 values; 32 divides all block sizes.
  const auto rb = ref::row_bytes(a.type, a.k);
  if (a.src == nullptr || a.dst == nullptr || !rb || a.k % 32 != 0 || a.dst_stride < a.k) {
    return cudaErrorInvalidValue;
  }
  const uint32_t groups = a.k / 32;
  constexpr unsigned threads = 128;
  const unsigned blocks = detail::div_up(static_cast<uint64_t>(a.n_rows) * groups, threads);
  const auto* src = static_cast<const uint8_t*>(a.src);
  iq4_levels iq4{};
  for (int i = 0; i < 16; ++i) iq4.v[i] = ref::iq4nl_values[i];
  if (a.dst_type == half_type::bf16) {
    dequantize_kernel<<<blocks, threads, 0, stream>>>(a.type, src, *rb, a.n_rows, groups,
                                                      static_cast<__nv_bfloat16*>(a.dst), a.dst_stride, iq4);
  } else {
    dequantize_kernel<<<blocks, threads, 0, stream>>>(a.type, src, *rb, a.n_rows, groups,
                                                      static_cast<__half*>(a.dst), a.dst_stride, iq4);
  }
  return last_launch_error();
}

} // namespace dynamo::kernels::gpu
