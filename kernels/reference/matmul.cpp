#include "kernels/reference/matmul.hpp"

#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/repack.hpp"
#include "kernels/reference/simd_kernels.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace dynamo::kernels::ref {
namespace {

using detail::block_q16_act;
using detail::kernel_table;
using detail::max_dot_tokens;

/// Tokens processed together per pass over a row chunk, so that their
/// quantized activations stay in L1 while the chunk's rows are streamed.
constexpr uint32_t token_tile = 16;

/// Rows per kernel call: enough to amortise the call, few enough that the
/// rows stay in L1 while the token groups of a tile pass over them.
constexpr uint32_t row_run = 8;

/// Fewest tokens for which the AMX tile kernels take a K-quant lane matrix:
/// a tile product costs the same for 1 or 16 tokens, and unpacking the rows
/// is paid once per call. Measured (1024 x 3072, 1 thread): even with the
/// lane kernels at 16 tokens for Q4_K / Q5_K, at 32 for Q6_K (whose half
/// sub-blocks take twice the tile products).
uint32_t min_tile_tokens(tensor_type t) { return t == tensor_type::q6_k ? 32 : 16; }


/// Everything a task needs; lives on the stack of matmul().
struct plan {
  const matmul_args* a;
  const kernel_table* kt;
  uint32_t k;
  uint32_t nb;                    ///< 32-value blocks per activation row
  const block_q16_act* xq;         ///< [n_tokens, nb] or null
  const detail::act_split* xs;     ///< [n_tokens] or null
  const detail::act_lanes* xl;     ///< [n_tokens] or null
  const detail::act_tiles* xt;     ///< all tokens in AMX tiles, or null
  std::array<uint32_t, 9> first;  ///< first global row of each weight (+ end)
  uint32_t rows;                  ///< total rows over all weights
  uint32_t chunk;                 ///< rows per task
};

/// Calls `dot(row r, nr rows, token t, nt tokens)` for every (row run,
/// group of <= 4 tokens) of rows [r0, r1): within a token tile, rows outer
/// (each row stays in L1 across tokens), token groups inner.
template <class Dot>
void tile_rows(uint32_t n_tokens, uint32_t r0, uint32_t r1, Dot dot) {
  for (uint32_t t0 = 0; t0 < n_tokens; t0 += token_tile) {
    const uint32_t t1 = std::min(n_tokens, t0 + token_tile);
    for (uint32_t r = r0; r < r1; r += row_run) {
      const uint32_t nr = std::min(row_run, r1 - r);
      for (uint32_t t = t0; t < t1; t += max_dot_tokens) dot(r, nr, t, std::min(max_dot_tokens, t1 - t));
    }
  }
}

/// Quant types: integer block dots against the int16 activation blocks.
void rows_integer(const plan& p, const weight_matrix& w, detail::dot_q_fn dot, uint32_t r0, uint32_t r1,
                  uint32_t col0) {
  const matmul_args& a = *p.a;
  const size_t rb = w.stride();
  const auto* base = static_cast<const std::byte*>(w.data);
  tile_rows(a.n_tokens, r0, r1, [&](uint32_t r, uint32_t nr, uint32_t t, uint32_t nt) {
    const block_q16_act* xs[max_dot_tokens];
    for (uint32_t i = 0; i < nt; ++i) xs[i] = p.xq + static_cast<size_t>(t + i) * p.nb;
    dot(base + r * rb, rb, nr, xs, nt, p.nb, a.y + t * a.y_stride + col0 + r, a.y_stride);
  });
}

/// Byte-lane quant types: the same against the split activations.
void rows_split(const plan& p, const weight_matrix& w, detail::dot_s_fn dot, uint32_t r0, uint32_t r1,
                uint32_t col0) {
  const matmul_args& a = *p.a;
  const size_t rb = w.stride();
  const auto* base = static_cast<const std::byte*>(w.data);
  tile_rows(a.n_tokens, r0, r1, [&](uint32_t r, uint32_t nr, uint32_t t, uint32_t nt) {
    dot(base + r * rb, rb, nr, p.xs + t, nt, p.nb, a.y + t * a.y_stride + col0 + r, a.y_stride);
  });
}

/// Repacked matrices: the lane kernels against the lane activations.
void rows_lanes(const plan& p, const weight_matrix& w, detail::dot_l_fn dot, uint32_t r0, uint32_t r1,
                uint32_t col0) {
  const matmul_args& a = *p.a;
  const size_t rb = w.lanes_stride;
  const auto* base = static_cast<const std::byte*>(w.lanes);
  tile_rows(a.n_tokens, r0, r1, [&](uint32_t r, uint32_t nr, uint32_t t, uint32_t nt) {
    dot(base + r * rb, rb, nr, p.xl + t, nt, p.nb, a.y + t * a.y_stride + col0 + r, a.y_stride);
  });
}

/// Repacked K-quant matrices on the AMX path: 16 rows against every token per call.
void rows_tiles(const plan& p, const weight_matrix& w, detail::dot_t_fn dot, uint32_t r0, uint32_t r1,
                uint32_t col0) {
  const matmul_args& a = *p.a;
  const auto* base = static_cast<const std::byte*>(w.lanes);
  for (uint32_t r = r0; r < r1; r += detail::tile_tokens) {
    const uint32_t nr = std::min(detail::tile_tokens, r1 - r);
    dot(base + r * w.lanes_stride, w.lanes_stride, nr, *p.xt, p.nb, a.y + col0 + r, a.y_stride);
  }
}

/// The lane kernel for w, when it has a repacked copy and the call is not in reference mode.
detail::dot_l_fn lanes_for(const kernel_table& kt, const weight_matrix& w, bool fp32_activations) {
  if (fp32_activations || w.lanes == nullptr || !lanes_fit(w.type, w.k)) return nullptr;
  return detail::lanes_dot(kt, w.type);
}

/// F32/F16/BF16: the weights widened in registers, dotted with fp32 activations.
void rows_float(const plan& p, const weight_matrix& w, detail::dot_f_fn dot, uint32_t r0, uint32_t r1,
                uint32_t col0) {
  const matmul_args& a = *p.a;
  const size_t rb = w.stride();
  const auto* base = static_cast<const std::byte*>(w.data);
  tile_rows(a.n_tokens, r0, r1, [&](uint32_t r, uint32_t nr, uint32_t t, uint32_t nt) {
    const float* xs[max_dot_tokens];
    for (uint32_t i = 0; i < nt; ++i) xs[i] = a.x + static_cast<size_t>(t + i) * a.x_stride;
    dot(base + r * rb, rb, nr, xs, nt, p.k, a.y + t * a.y_stride + col0 + r, a.y_stride);
  });
}

/// Reference mode for the quant types: each row dequantized to fp32 (one
/// row at a time, never the matrix) and dotted with the exact activations.
void rows_dequantized(const plan& p, const weight_matrix& w, uint32_t r0, uint32_t r1, uint32_t col0) {
  const matmul_args& a = *p.a;
  thread_local std::vector<float> buf;
  if (buf.size() < p.k) buf.resize(p.k);
  for (uint32_t r = r0; r < r1; ++r) {
    dequantize_row(w.type, w.row(r), buf.data(), p.k);
    for (uint32_t t = 0; t < a.n_tokens; ++t) {
      a.y[t * a.y_stride + col0 + r] = p.kt->dot(buf.data(), a.x + t * a.x_stride, p.k);
    }
  }
}

void run_task(const plan& p, uint32_t task) {
  uint32_t g0 = task * p.chunk;
  const uint32_t g1 = std::min(p.rows, g0 + p.chunk);
  for (size_t j = 0; j < p.a->weights.size() && g0 < g1; ++j) {
    if (g0 >= p.first[j + 1]) continue;
    const uint32_t end = std::min(g1, p.first[j + 1]);
    const weight_matrix& w = p.a->weights[j];
    const uint32_t r0 = g0 - p.first[j], r1 = end - p.first[j];
    if (const auto fdot = detail::float_dot(*p.kt, w.type)) {
      rows_float(p, w, fdot, r0, r1, p.first[j]);
    } else if (p.a->fp32_activations) {
      rows_dequantized(p, w, r0, r1, p.first[j]);
    } else if (const auto tdot = p.xt != nullptr && lanes_for(*p.kt, w, false) != nullptr
                                     ? detail::tiles_dot(*p.kt, w.type)
                                     : nullptr) {
      rows_tiles(p, w, tdot, r0, r1, p.first[j]);
    } else if (const auto ldot = lanes_for(*p.kt, w, false)) {
      rows_lanes(p, w, ldot, r0, r1, p.first[j]);
    } else if (const auto idot = detail::integer_dot(*p.kt, w.type); idot.split != nullptr) {
      rows_split(p, w, idot.split, r0, r1, p.first[j]);
    } else {
      rows_integer(p, w, idot.q16, r0, r1, p.first[j]);
    }
    g0 = end;
  }
}

/// Bytes of one token's split activations: nb blocks, then d and s padded to 8.
size_t split_bytes(uint32_t nb) {
  const size_t nb8 = (nb + 7) / 8 * 8;
  return nb * sizeof(detail::block_q16_split) + 2 * nb8 * sizeof(float);
}

/// Bytes of one token's lane activations: nb / 8 super-blocks, then d and s.
size_t lanes_bytes(uint32_t nb) {
  return nb / 8 * sizeof(detail::block_q16_lanes) + 2 * static_cast<size_t>(nb) * sizeof(float);
}

/// Where the per-token forms of the activations go: the split form when
/// `xs` is set (token t's blocks at split + t * split_bytes(nb)), the lane
/// form when `xl` is set (at lanes + t * lanes_bytes(nb)); both 32-aligned.
struct act_forms {
  std::byte* split = nullptr;
  detail::act_split* xs = nullptr;
  std::byte* lanes = nullptr;
  detail::act_lanes* xl = nullptr;
};

/// Quantizes every token, then builds the forms `f` asks for.
void quantize_activations(const matmul_args& a, const kernel_table& kt, uint32_t nb, block_q16_act* xq,
                          const act_forms& f) {
  auto one = [&](uint32_t t) {
    block_q16_act* q = xq + static_cast<size_t>(t) * nb;
    kt.quantize_act(a.x + t * a.x_stride, q, nb);
    if (f.xs != nullptr) {
      auto* b = reinterpret_cast<detail::block_q16_split*>(f.split + t * split_bytes(nb));
      auto* d = reinterpret_cast<float*>(b + nb);
      float* s = d + (nb + 7) / 8 * 8;
      detail::split_act(q, nb, b, d, s);
      f.xs[t] = {b, d, s};
    }
    if (f.xl != nullptr) {
      auto* b = reinterpret_cast<detail::block_q16_lanes*>(f.lanes + t * lanes_bytes(nb));
      auto* d = reinterpret_cast<float*>(b + nb / 8);
      detail::lanes_act(q, nb, b, d, d + nb);
      f.xl[t] = {b, d, d + nb, q};
    }
  };
  if (a.pool != nullptr && a.n_tokens >= 8) {
    a.pool->parallel_for(a.n_tokens, one);
  } else {
    for (uint32_t t = 0; t < a.n_tokens; ++t) one(t);
  }
}

/// n_tokens * per_token bytes of `buf`, 32-aligned, followed by n_tokens
/// descriptors of `desc` bytes (32 bytes of slack cover the alignment).
std::byte* aligned_scratch(std::vector<std::byte>& buf, uint32_t n_tokens, size_t per_token, size_t desc) {
  const size_t need = 32 + n_tokens * (per_token + desc);
  if (buf.size() < need) buf.resize(need);
  const auto addr = reinterpret_cast<uintptr_t>(buf.data());
  return buf.data() + ((32 - addr % 32) % 32);
}

} // namespace

void matmul(const matmul_args& a) {
  if (a.n_tokens == 0 || a.weights.empty()) return;
  plan p{};
  p.a = &a;
  p.kt = &detail::active_kernels();
  p.k = a.weights[0].k;
  p.nb = p.k / 32;
  // More weights than this in one call is a caller bug; the model passes <= 3.
  const size_t n_weights = std::min<size_t>(a.weights.size(), p.first.size() - 1);
  bool any_integer = false, any_split = false, any_lanes = false, any_tiles = false;
  p.first[0] = 0;
  for (size_t j = 0; j < n_weights; ++j) {
    p.first[j + 1] = p.first[j] + a.weights[j].n;
    const auto idot = detail::integer_dot(*p.kt, a.weights[j].type);
    const bool lanes = lanes_for(*p.kt, a.weights[j], a.fp32_activations) != nullptr;
    const bool tiles = lanes && a.n_tokens >= min_tile_tokens(a.weights[j].type) && detail::tiles_dot(*p.kt, a.weights[j].type) != nullptr;
    any_integer = any_integer || (idot && !a.fp32_activations);
    any_split = any_split || (idot.split != nullptr && !a.fp32_activations && !lanes);
    any_lanes = any_lanes || (lanes && !tiles);
    any_tiles = any_tiles || tiles;
  }
  p.rows = p.first[n_weights];

  detail::act_tiles xt{};
  matmul_workspace local;
  matmul_workspace& ws = a.workspace != nullptr ? *a.workspace : local;
  if (any_integer) {
    const size_t bytes = static_cast<size_t>(a.n_tokens) * p.nb * sizeof(block_q16_act);
    if (ws.act.size() < bytes) ws.act.resize(bytes);
    auto* xq = reinterpret_cast<block_q16_act*>(ws.act.data());
    act_forms f;
    if (any_split) {
      f.split = aligned_scratch(ws.split, a.n_tokens, split_bytes(p.nb), sizeof(detail::act_split));
      f.xs = reinterpret_cast<detail::act_split*>(f.split + a.n_tokens * split_bytes(p.nb));
    }
    if (any_lanes) {
      f.lanes = aligned_scratch(ws.lanes, a.n_tokens, lanes_bytes(p.nb), sizeof(detail::act_lanes));
      f.xl = reinterpret_cast<detail::act_lanes*>(f.lanes + a.n_tokens * lanes_bytes(p.nb));
    }
    quantize_activations(a, *p.kt, p.nb, xq, f);
    p.xq = xq;
    p.xs = f.xs;
    p.xl = f.xl;
    if (any_tiles) {
      const size_t n_tiles = (a.n_tokens + detail::tile_tokens - 1) / detail::tile_tokens;
      const size_t need = 64 + n_tiles * p.nb * sizeof(detail::block_q16_tile);
      if (ws.tiles.size() < need) ws.tiles.resize(need);
      const auto addr = reinterpret_cast<uintptr_t>(ws.tiles.data());
      auto* tiles = reinterpret_cast<detail::block_q16_tile*>(ws.tiles.data() + (64 - addr % 64) % 64);
      (p.kt->tiles_act != nullptr ? p.kt->tiles_act : detail::tiles_act)(xq, a.n_tokens, p.nb, tiles);
      xt = {tiles, a.n_tokens};
      p.xt = &xt;
    }
  }

  const uint32_t threads = a.pool != nullptr ? a.pool->size() : 1;
  p.chunk = std::clamp<uint32_t>((p.rows + threads * 8 - 1) / (threads * 8), 4, 512);
  const uint32_t n_tasks = (p.rows + p.chunk - 1) / p.chunk;
  auto task = [&p](uint32_t t) { run_task(p, t); };
  if (a.pool != nullptr) {
    a.pool->parallel_for(n_tasks, task);
  } else {
    for (uint32_t t = 0; t < n_tasks; ++t) task(t);
  }
}

} // namespace dynamo::kernels::ref
