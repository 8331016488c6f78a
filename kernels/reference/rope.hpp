// Rotary position embedding, in place, from precomputed cos/sin tables.
//   norm: rotates adjacent pairs (x[2i], x[2i+1]) -- GGUF llama weights, whose
//         Q/K rows llama.cpp's converter permuted (research/engine.md 1.5);
//   neox: rotates (x[i], x[i + rot/2]) -- "rotate half", Qwen2/3 and HF weights.
// Both use theta_i = pos * scale * base^(-2i/rot) / factor_i, where scale is
// linear RoPE scaling (1 / factor) and factor_i Llama 3.1's per-pair
// rope_freqs (1 without them). Tables are immutable once built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::kernels::ref {

enum class rope_style { norm, neox };

/// cos/sin of theta for every position < max_positions and pair i < rot_dim/2.
struct rope_table {
  uint32_t rot_dim = 0;
  uint32_t max_positions = 0;
  std::vector<float> cos; ///< [max_positions, rot_dim / 2]
  std::vector<float> sin; ///< [max_positions, rot_dim / 2]
};

/// Angles are computed in double and rounded once. REQUIRES: rot_dim even;
/// freq_factors empty or of rot_dim / 2 positive values.
[[nodiscard]] rope_table make_rope_table(uint32_t rot_dim, uint32_t max_positions, float base,
                                         float freq_scale = 1.0f, std::span<const float> freq_factors = {});

struct rope_args {
  float* x = nullptr;               ///< [n_tokens, n_heads, head_dim]; token t at x + t * x_stride
  size_t x_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n_heads = 0;
  uint32_t head_dim = 0;            ///< REQUIRES: table->rot_dim <= head_dim; the rest is untouched
  const uint32_t* positions = nullptr; ///< [n_tokens]; REQUIRES: < table->max_positions
  const rope_table* table = nullptr;
  rope_style style = rope_style::norm;
};

void rope(const rope_args& args);

} // namespace dynamo::kernels::ref
