// Rotary position embedding on the GPU, in place on bf16 heads, from the same
// precomputed cos/sin tables as the CPU (kernels/reference/rope.hpp builds
// them; upload them once). Styles as in the reference:
//   norm: rotates (x[2i], x[2i+1])        -- GGUF llama weights (Q/K rows permuted)
//   neox: rotates (x[i], x[i + rot/2])    -- Qwen2/3, HF weights
// Q and K sit side by side in the fused QKV row, so one launch with
// n_heads = n_head + n_kv_head rotates both. Rotation math is fp32.
// Optionally each head is first RMS-normalised (Qwen3's Q/K norms): in fp32,
// then rotated, then rounded to bf16 once. CPU reference: ref::rms_norm over
// each head, then ref::rope.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::gpu {

enum class rope_style : uint8_t { norm = 0, neox = 1 };

struct rope_args {
  __nv_bfloat16* x = nullptr;       ///< [n_tokens, n_heads, head_dim] bf16; token t at x + t * x_stride
  size_t x_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n_heads = 0;
  uint32_t head_dim = 0;
  uint32_t rot_dim = 0;             ///< REQUIRES: even, <= head_dim; dims >= rot_dim are untouched
  const uint32_t* positions = nullptr; ///< [n_tokens] device
  const float* cos = nullptr;       ///< [max_positions, rot_dim / 2] fp32 device
  const float* sin = nullptr;       ///< [max_positions, rot_dim / 2] fp32 device
  uint32_t max_positions = 0;       ///< positions >= this leave the token unrotated (a bug upstream)
  rope_style style = rope_style::norm;
  /// Optional per-head RMSNorm weights ([head_dim] fp32 device): heads
  /// [0, n_q_heads) use q_norm, the others k_norm; a null weight leaves its
  /// heads unnormalised. REQUIRES with either: head_dim <= max_rope_norm_head_dim.
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  uint32_t n_q_heads = 0;
  float norm_eps = 1e-6f;
};

/// The widest head the normalising path stages in shared memory.
inline constexpr uint32_t max_rope_norm_head_dim = 4096;

[[nodiscard]] cudaError_t launch_rope(const rope_args& args, cudaStream_t stream);

} // namespace dynamo::kernels::gpu
