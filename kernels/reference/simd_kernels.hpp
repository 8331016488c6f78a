// Internal to kernels/reference: the instruction-set-specific inner loops
// (integer block dots, float dots, fp16 KV helpers, activation quantization)
// behind one table per path, picked by cpu_features at call time. The public
// ops (matmul, paged_attention) call through active_kernels(). Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref::detail {

/// An activation block quantized for integer dots: 32 int16 values
/// q = nearbyint(x * 32767 / amax) with scale `d = amax / 32767` and
/// `s = d * sum(qs)` (the latter folds in Q4_0/Q4_1 offsets). 16 bits, not 8:
/// blocks that hold one massive activation (attention-sink tokens) keep their
/// small entries.
struct block_q16_act {
  float d;
  float s;
  int16_t qs[32];
};
static_assert(sizeof(block_q16_act) == 72);

/// Most tokens one weight row is dotted with per call (the weight block is
/// unpacked once and reused).
inline constexpr uint32_t max_dot_tokens = 4;

/// For rows r < n_rows of a weight matrix (row r at w + r * row_bytes, nb
/// blocks each) and tokens t < nt <= 4 (activation blocks x[t][0..nb)):
///   y[t * y_stride + r] = dot(row r, x[t]).
/// For a fixed (row, token), the arithmetic does not depend on nt or n_rows
/// (batch-invariant), and every path gives the same bits: per block, eight
/// exact int32 lane sums (lane l: elements 2l, 2l+1, 16+2l, 17+2l) are
/// converted to float and fused-multiply-added into accumulator lanes (even
/// blocks in one accumulator, odd in another); then the lanes are summed in a
/// fixed tree (see simd_scalar.cpp, which spells it out).
using dot_q_fn = void (*)(const void* w, size_t row_bytes, uint32_t n_rows, const block_q16_act* const* x,
                          uint32_t nt, uint32_t nb, float* y, size_t y_stride);

struct kernel_table {
  dot_q_fn dot_q4_0;
  dot_q_fn dot_q4_1;
  dot_q_fn dot_q8_0;
  /// Quantizes nb*32 floats into nb activation blocks.
  void (*quantize_act)(const float* x, block_q16_act* y, uint32_t nb);
  /// sum a[i]*b[i], i < n.
  float (*dot_f32)(const float* a, const float* b, uint32_t n);
  /// y[i] += a * x[i].
  void (*axpy_f32)(float a, const float* x, float* y, uint32_t n);
  /// y[i] = fp16(x[i]), round to nearest even.
  void (*store_f16)(const float* x, uint16_t* y, uint32_t n);
  /// y[i] = float(x[i]) (exact).
  void (*load_f16)(const uint16_t* x, float* y, uint32_t n);
};

[[nodiscard]] const kernel_table& scalar_kernels() noexcept;
/// Null when the library was built for a non-x86 target.
[[nodiscard]] const kernel_table* avx2_kernels() noexcept;
[[nodiscard]] const kernel_table* avx2_vnni_kernels() noexcept;

/// The table for cpu_features' active_isa().
[[nodiscard]] const kernel_table& active_kernels() noexcept;

} // namespace dynamo::kernels::ref::detail
