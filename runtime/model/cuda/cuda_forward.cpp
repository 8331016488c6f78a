#include "runtime/model/cuda/cuda_state.hpp"

#include "kernels/bias_add.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/embedding.cuh"
#include "kernels/gemm.cuh"
#include "kernels/kv_store.cuh"
#include "kernels/moe.cuh"
#include "kernels/nonfinite.cuh"
#include "kernels/paged_attention.cuh"
#include "kernels/rms_norm.cuh"
#include "kernels/rope.cuh"
#include "kernels/swiglu.cuh"

#include <spdlog/spdlog.h>

#include <cmath>

namespace dynamo::model {

namespace gpu = kernels::gpu;

device_memory& device_memory::operator=(device_memory&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

cudaError_t device_memory::allocate(size_t bytes) {
  reset();
  const cudaError_t e = cudaMalloc(&p_, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess) {
    p_ = nullptr;
    return e;
  }
  bytes_ = bytes;
  return cudaSuccess;
}

void device_memory::reset() noexcept {
  if (p_ != nullptr) (void)cudaFree(p_);
  p_ = nullptr;
  bytes_ = 0;
}

pinned_memory::~pinned_memory() {
  if (p_ != nullptr) (void)cudaFreeHost(p_);
}

cudaError_t pinned_memory::allocate(size_t bytes) {
  if (p_ != nullptr) (void)cudaFreeHost(p_);
  p_ = nullptr;
  bytes_ = 0;
  DYNAMO_CUDA_TRY(cudaMallocHost(&p_, bytes == 0 ? 1 : bytes));
  bytes_ = bytes;
  return cudaSuccess;
}

cuda_state::~cuda_state() {
  (void)cudaSetDevice(config.device); // the executor may be destroyed on another thread
  if (stream != nullptr) (void)cudaStreamSynchronize(stream);
  for (auto& [bucket, exec] : graphs) (void)cudaGraphExecDestroy(exec);
  if (cublas != nullptr) (void)cublasDestroy(cublas);
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
}

namespace {

using bf16 = __nv_bfloat16;

/// y[m, n] = x[m, k] . w^T for a weight slot.
cudaError_t gemm(cuda_state& s, const bf16* x, size_t x_stride, const cuda_tensor_slot& w, void* y, size_t y_stride,
                 uint32_t m, gpu::gemm_out out = gpu::gemm_out::bf16) {
  gpu::gemm_args a;
  a.handle = s.cublas;
  a.x = x;
  a.x_stride = x_stride;
  a.w = s.weights.at<bf16>(w.offset);
  a.w_stride = w.cols;
  a.y = y;
  a.y_stride = y_stride;
  a.y_type = out;
  a.m = m;
  a.n = w.rows;
  a.k = w.cols;
  return gpu::launch_gemm(a, s.stream);
}

cudaError_t rms_norm(cuda_state& s, const bf16* residual, const cuda_tensor_slot& weight, bf16* out,
                     const uint32_t* rows, uint32_t n_rows) {
  const uint32_t E = s.cfg.n_embd;
  gpu::rms_norm_args a;
  a.x = s.activations.at<float>(s.act_layout.x.offset);
  a.x_stride = E;
  a.residual = residual;
  a.residual_stride = E;
  a.weight = s.weights.at<float>(weight.offset);
  a.out = out;
  a.out_stride = E;
  a.rows = rows;
  a.n_rows = n_rows;
  a.n = E;
  a.eps = s.cfg.rms_eps;
  return gpu::launch_rms_norm(a, s.stream);
}

/// The debug check (cuda_state::check_finite): counts non-finite values in an
/// op's output and logs the first op that made any, then stops checking.
cudaError_t check_finite(cuda_state& s, const char* op, uint32_t layer, const void* data, size_t n, bool bf16) {
  if (!s.check_finite || s.capturing) return cudaSuccess;
  auto* count = s.finite_count.at<uint32_t>(0);
  DYNAMO_CUDA_TRY(cudaMemsetAsync(count, 0, 4, s.stream));
  DYNAMO_CUDA_TRY(gpu::launch_count_nonfinite(data, n, bf16, count, s.stream));
  uint32_t host = 0;
  DYNAMO_CUDA_TRY(cudaMemcpyAsync(&host, count, 4, cudaMemcpyDeviceToHost, s.stream));
  DYNAMO_CUDA_TRY(cudaStreamSynchronize(s.stream));
  if (host != 0) {
    spdlog::error("cuda_executor: {} non-finite values after {} (layer {})", host, op, layer);
    s.check_finite = false;
  }
  return cudaSuccess;
}

/// Layer `l`'s K/V as the kernels address them (the CPU cache's layout).
gpu::paged_kv layer_kv(cuda_state& s, uint32_t l) {
  const decoder_config& c = s.cfg;
  const size_t per_kv = size_t(s.config.block_size) * c.n_kv_head * c.head_dim; // elements of K (or V) per block+layer
  bf16* base = s.kv.at<bf16>(0) + size_t(l) * 2 * per_kv;
  return {base, base + per_kv, size_t(c.n_layer) * 2 * per_kv, s.config.block_size, c.n_kv_head, c.head_dim};
}

/// y[t, :n] += bias (fp32) on a bf16 GEMM output.
cudaError_t bias_add(cuda_state& s, bf16* y, size_t stride, const cuda_tensor_slot& bias, uint32_t T) {
  return gpu::launch_bias_add({y, stride, s.weights.at<float>(bias.offset), T, bias.cols}, s.stream);
}

/// Attention sub-block: x += delta; h = norm(x); delta = o-proj(attention(h)).
cudaError_t encode_attention(cuda_state& s, uint32_t l, const cuda_step_pointers& m, uint32_t T,
                             const cuda_attention_split& split) {
  const decoder_config& c = s.cfg;
  const cuda_layer_slots& w = s.weights_layout.layers[l];
  const cuda_activation_layout& al = s.act_layout;
  const uint32_t E = c.n_embd, QD = c.n_head * c.head_dim, KVD = c.n_kv_head * c.head_dim;
  const uint32_t QKV = QD + 2 * KVD;
  bf16* h = s.activations.at<bf16>(al.h.offset);
  bf16* qkv = s.activations.at<bf16>(al.qkv.offset);
  bf16* attn = s.activations.at<bf16>(al.attn.offset);
  bf16* delta = s.activations.at<bf16>(al.delta.offset);

  // x += previous sub-block output (none before layer 0); h = norm(x).
  DYNAMO_CUDA_TRY(rms_norm(s, l == 0 ? nullptr : delta, w.attn_norm, h, nullptr, T));
  DYNAMO_CUDA_TRY(check_finite(s, "attn_norm", l, h, size_t(T) * E, true));
  DYNAMO_CUDA_TRY(gemm(s, h, E, w.wqkv, qkv, QKV, T));
  if (!w.bqkv.empty()) DYNAMO_CUDA_TRY(bias_add(s, qkv, QKV, w.bqkv, T)); // Qwen2: bq | bk | bv
  DYNAMO_CUDA_TRY(check_finite(s, "qkv gemm", l, qkv, size_t(T) * QKV, true));

  gpu::rope_args r;
  r.x = qkv; // Q heads then K heads: one launch rotates both
  r.x_stride = QKV;
  r.n_tokens = T;
  r.n_heads = c.n_head + c.n_kv_head;
  r.head_dim = c.head_dim;
  r.rot_dim = c.rot_dim;
  r.positions = m.positions;
  r.cos = s.rope_cos.at<float>(0);
  r.sin = s.rope_sin.at<float>(0);
  r.max_positions = s.max_model_len;
  r.style = c.rope == kernels::ref::rope_style::norm ? gpu::rope_style::norm : gpu::rope_style::neox;
  // Qwen3: each Q and K head RMS-normalised first, in the same launch.
  r.q_norm = w.q_norm.empty() ? nullptr : s.weights.at<float>(w.q_norm.offset);
  r.k_norm = w.k_norm.empty() ? nullptr : s.weights.at<float>(w.k_norm.offset);
  r.n_q_heads = c.n_head;
  r.norm_eps = c.rms_eps;
  DYNAMO_CUDA_TRY(gpu::launch_rope(r, s.stream));
  DYNAMO_CUDA_TRY(check_finite(s, "rope", l, qkv, size_t(T) * QKV, true));

  const gpu::paged_kv kv = layer_kv(s, l);
  gpu::kv_store_args st;
  st.k = qkv + QD;
  st.k_stride = QKV;
  st.v = qkv + QD + KVD;
  st.v_stride = QKV;
  st.slots = m.slots;
  st.n_tokens = T;
  st.kv = kv;
  DYNAMO_CUDA_TRY(gpu::launch_kv_store(st, s.stream));

  gpu::paged_attention_args at;
  at.q = qkv;
  at.q_stride = QKV;
  at.out = attn;
  at.out_stride = QD;
  at.n_tokens = T;
  at.n_head = c.n_head;
  at.scale = 1.0f / std::sqrt(float(c.head_dim));
  at.kv = kv;
  at.positions = m.positions;
  at.token_seq = m.token_seq;
  at.block_tables = m.tables;
  at.block_table_stride = s.table_stride;
  if (split.partition_size > 0) {
    at.partition_size = split.partition_size;
    at.max_partitions = split.max_partitions;
    at.workspace = s.activations.at<float>(al.attn_ws.offset);
  }
  DYNAMO_CUDA_TRY(gpu::launch_paged_attention(at, s.stream));
  DYNAMO_CUDA_TRY(check_finite(s, "attention", l, attn, size_t(T) * QD, true));
  DYNAMO_CUDA_TRY(gemm(s, attn, QD, w.wo, delta, E, T));
  if (!w.bo.empty()) DYNAMO_CUDA_TRY(bias_add(s, delta, E, w.bo, T));
  return check_finite(s, "o gemm", l, delta, size_t(T) * E, true);
}

/// A SwiGLU FFN of dense weights: out = down(silu(gate h) * up h), T rows.
cudaError_t encode_swiglu_ffn(cuda_state& s, uint32_t l, const cuda_tensor_slot& wgu, const cuda_tensor_slot& wdown,
                              bf16* out, uint32_t T) {
  const cuda_activation_layout& al = s.act_layout;
  const uint32_t E = s.cfg.n_embd, F = wdown.cols;
  bf16* h = s.activations.at<bf16>(al.h.offset);
  bf16* gu = s.activations.at<bf16>(al.gu.offset);
  bf16* act = s.activations.at<bf16>(al.act.offset);
  DYNAMO_CUDA_TRY(gemm(s, h, E, wgu, gu, 2 * size_t(F), T));
  DYNAMO_CUDA_TRY(check_finite(s, "gate|up gemm", l, gu, size_t(T) * 2 * F, true));
  DYNAMO_CUDA_TRY(gpu::launch_swiglu({gu, gu + F, 2 * size_t(F), act, F, T, F}, s.stream));
  DYNAMO_CUDA_TRY(check_finite(s, "swiglu", l, act, size_t(T) * F, true));
  DYNAMO_CUDA_TRY(gemm(s, act, F, wdown, out, E, T));
  return check_finite(s, "down gemm", l, out, size_t(T) * E, true);
}

/// y[r] = W_e . x[x_row[r]] for the sorted rows r of each expert e of a
/// stacked expert slot ([n_expert * n, k]); rows and widths packed densely.
cudaError_t expert_matmul(cuda_state& s, const bf16* x, const uint32_t* x_row, const cuda_tensor_slot& w,
                          const uint32_t* expert_start, bf16* y, uint32_t n_rows) {
  const uint32_t n_expert = s.cfg.moe.n_expert;
  gpu::moe_matmul_args a;
  a.x = x;
  a.x_stride = w.cols;
  a.x_row = x_row;
  a.w = s.weights.at<bf16>(w.offset);
  a.w_stride = w.cols;
  a.expert_start = expert_start;
  a.y = y;
  a.n = w.rows / n_expert;
  a.y_stride = a.n;
  a.n_rows = n_rows;
  a.n_expert = n_expert;
  a.k = w.cols;
  return gpu::launch_moe_matmul(a, s.stream);
}

/// MoE FFN: h -> delta through the routed experts (route, group by expert,
/// grouped gate|up, SwiGLU, grouped down) and the shared expert, combined.
/// Sizes that depend on the routing stay on the device.
cudaError_t encode_moe(cuda_state& s, uint32_t l, uint32_t T) {
  const decoder_config& c = s.cfg;
  const moe_config& mc = c.moe;
  const cuda_layer_slots& w = s.weights_layout.layers[l];
  const cuda_activation_layout& al = s.act_layout;
  const uint32_t E = c.n_embd, F = mc.n_ff_expert, k = mc.n_expert_used, P = T * k;
  const bool shared = !w.shared_gate_inp.empty();
  bf16* h = s.activations.at<bf16>(al.h.offset);
  bf16* gu = s.activations.at<bf16>(al.gu.offset);
  bf16* act = s.activations.at<bf16>(al.act.offset);
  bf16* y = s.activations.at<bf16>(al.moe_y.offset);
  auto* expert = s.activations.at<uint32_t>(al.moe_expert.offset);
  auto* start = s.activations.at<uint32_t>(al.moe_start.offset);
  auto* pair_token = s.activations.at<uint32_t>(al.pair_token.offset);
  auto* pair_row = s.activations.at<uint32_t>(al.pair_row.offset);
  float* weight = s.activations.at<float>(al.moe_weight.offset);
  float* gate = shared ? s.activations.at<float>(al.shared_gate.offset) : nullptr;

  gpu::moe_route_args r;
  r.x = h;
  r.x_stride = E;
  r.router = s.weights.at<float>(w.router.offset);
  r.shared_gate_w = shared ? s.weights.at<float>(w.shared_gate_inp.offset) : nullptr;
  r.n_tokens = T;
  r.n_embd = E;
  r.n_expert = mc.n_expert;
  r.k = k;
  r.normalize = mc.norm_topk;
  r.scale = mc.weights_scale;
  r.expert = expert;
  r.weight = weight;
  r.shared_gate = gate;
  DYNAMO_CUDA_TRY(gpu::launch_moe_route(r, s.stream));
  DYNAMO_CUDA_TRY(check_finite(s, "moe route", l, weight, P, false));
  DYNAMO_CUDA_TRY(gpu::launch_moe_group({expert, P, k, mc.n_expert, start, pair_token, pair_row}, s.stream));

  // gate|up: sorted row r reads token pair_token[r]; down: sorted row r reads act row r.
  DYNAMO_CUDA_TRY(expert_matmul(s, h, pair_token, w.wgu_exps, start, gu, P));
  DYNAMO_CUDA_TRY(check_finite(s, "expert gate|up", l, gu, size_t(P) * 2 * F, true));
  DYNAMO_CUDA_TRY(gpu::launch_swiglu({gu, gu + F, 2 * size_t(F), act, F, P, F}, s.stream));
  DYNAMO_CUDA_TRY(expert_matmul(s, act, nullptr, w.wdown_exps, start, y, P));
  DYNAMO_CUDA_TRY(check_finite(s, "expert down", l, y, size_t(P) * E, true));

  // The shared expert reuses gu and act (free again) and writes shared_y.
  bf16* shared_y = shared ? s.activations.at<bf16>(al.shared_y.offset) : nullptr;
  if (shared) DYNAMO_CUDA_TRY(encode_swiglu_ffn(s, l, w.wgu_shexp, w.wdown_shexp, shared_y, T));
  gpu::moe_combine_args cb;
  cb.y = y;
  cb.y_stride = E;
  cb.weight = weight;
  cb.pair_row = pair_row;
  cb.shared = shared_y;
  cb.shared_stride = E;
  cb.shared_gate = gate;
  cb.out = s.activations.at<bf16>(al.delta.offset);
  cb.out_stride = E;
  cb.n_tokens = T;
  cb.k = k;
  cb.n = E;
  DYNAMO_CUDA_TRY(gpu::launch_moe_combine(cb, s.stream));
  return check_finite(s, "moe combine", l, cb.out, size_t(T) * E, true);
}

cudaError_t encode_layer(cuda_state& s, uint32_t l, const cuda_step_pointers& m, uint32_t T,
                         const cuda_attention_split& split) {
  const cuda_layer_slots& w = s.weights_layout.layers[l];
  const cuda_activation_layout& al = s.act_layout;
  bf16* h = s.activations.at<bf16>(al.h.offset);
  bf16* delta = s.activations.at<bf16>(al.delta.offset);
  DYNAMO_CUDA_TRY(encode_attention(s, l, m, T, split));
  // x += attention output; h = norm(x).
  DYNAMO_CUDA_TRY(rms_norm(s, delta, w.ffn_norm, h, nullptr, T));
  DYNAMO_CUDA_TRY(check_finite(s, "ffn_norm", l, h, size_t(T) * s.cfg.n_embd, true));
  if (s.cfg.is_moe()) return encode_moe(s, l, T);
  return encode_swiglu_ffn(s, l, w.wgu, w.wdown, delta, T);
}

} // namespace

cudaError_t encode_forward(cuda_state& s, const cuda_step_pointers& m, uint32_t T, uint32_t n_lm_rows,
                           const cuda_attention_split& split) {
  const decoder_config& c = s.cfg;
  const cuda_activation_layout& al = s.act_layout;
  const cuda_weight_layout& wl = s.weights_layout;
  gpu::embedding_args e;
  e.table = s.weights.at<void>(wl.token_embd.offset);
  e.dtype = gpu::half_type::bf16;
  e.n_vocab = wl.token_embd.rows;
  e.n_embd = c.n_embd;
  e.ids = m.ids;
  e.n_tokens = T;
  e.out = s.activations.at<float>(al.x.offset);
  e.out_stride = c.n_embd;
  DYNAMO_CUDA_TRY(gpu::launch_embedding(e, s.stream));
  DYNAMO_CUDA_TRY(check_finite(s, "embedding", 0, e.out, size_t(T) * c.n_embd, false));
  for (uint32_t l = 0; l < c.n_layer; ++l) DYNAMO_CUDA_TRY(encode_layer(s, l, m, T, split));
  if (n_lm_rows == 0) return cudaSuccess;
  // Only the LM-head rows need the last residual add and the final norm.
  bf16* hs = s.activations.at<bf16>(al.hs.offset);
  DYNAMO_CUDA_TRY(rms_norm(s, s.activations.at<bf16>(al.delta.offset), wl.output_norm, hs, m.lm_rows, n_lm_rows));
  DYNAMO_CUDA_TRY(check_finite(s, "output_norm", c.n_layer, hs, size_t(n_lm_rows) * c.n_embd, true));
  DYNAMO_CUDA_TRY(gemm(s, hs, c.n_embd, wl.output, s.activations.at<float>(al.logits.offset), c.n_vocab, n_lm_rows,
              gpu::gemm_out::f32));
  return check_finite(s, "lm_head", c.n_layer, s.activations.at<float>(al.logits.offset), size_t(n_lm_rows) * c.n_vocab, false);
}

} // namespace dynamo::model
