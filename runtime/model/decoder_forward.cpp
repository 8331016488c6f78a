#include "runtime/model/decoder_forward.hpp"
#include "runtime/kv/block_count.hpp"

#include "kernels/reference/bias_add.hpp"
#include "kernels/reference/embedding.hpp"
#include "kernels/reference/kv_store.hpp"
#include "kernels/reference/moe.hpp"
#include "kernels/reference/rms_norm.hpp"
#include "kernels/reference/swiglu.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace dynamo::model {

namespace kr = kernels::ref;

namespace {

caf::error bad_entry(const engine::batch_entry& e, const std::string& what) {
  return make_error(errc::invalid_argument, "batch entry for sequence " + std::to_string(e.seq_id) + ": " + what);
}

} // namespace

decoder_forward::decoder_forward(std::shared_ptr<const decoder_model> model, kr::thread_pool& pool,
                             forward_options options)
    : model_(std::move(model)), pool_(pool), options_(options) {
  const decoder_config& c = model_->config();
  rope_ = kr::make_rope_table(c.rot_dim, c.context_length, c.rope_base, c.rope_freq_scale,
                              model_->weights().rope_freqs);
}

expected<void> decoder_forward::check(const engine::batch& b, const kv_cache_shape& kv) const {
  const decoder_config& c = model_->config();
  uint64_t total = 0;
  for (const auto& e : b.entries) {
    if (e.fork_of && e.tokens.empty()) continue; // samples another entry's logits; computes nothing
    if (e.tokens.empty()) return bad_entry(e, "no tokens");
    const uint64_t end = uint64_t(e.start_pos) + e.tokens.size();
    if (end > c.context_length) {
      return bad_entry(e, "positions up to " + std::to_string(end) + " exceed the context length " +
                              std::to_string(c.context_length));
    }
    const uint64_t blocks_needed = kv::blocks_for_tokens(end, kv.block_size);
    if (e.block_table.size() < blocks_needed) {
      return bad_entry(e, "block table has " + std::to_string(e.block_table.size()) + " blocks, " +
                              std::to_string(blocks_needed) + " needed");
    }
    for (uint64_t i = 0; i < blocks_needed; ++i) {
      if (e.block_table[i] >= kv.num_blocks) {
        return bad_entry(e, "block id " + std::to_string(e.block_table[i]) + " outside the pool of " +
                                std::to_string(kv.num_blocks));
      }
    }
    for (uint32_t t : e.tokens) {
      if (t >= c.n_vocab) return bad_entry(e, "token id " + std::to_string(t) + " >= vocabulary size");
    }
    if (e.prompt_targets.size() > e.tokens.size()) return bad_entry(e, "more prompt targets than tokens");
    for (uint32_t t : e.prompt_targets) {
      if (t >= c.n_vocab) return bad_entry(e, "prompt target " + std::to_string(t) + " >= vocabulary size");
    }
    total += e.tokens.size();
  }
  if (total != b.num_tokens) {
    return make_error(errc::invalid_argument, "batch num_tokens " + std::to_string(b.num_tokens) +
                                                  " but its entries hold " + std::to_string(total));
  }
  return {};
}

void decoder_forward::prepare(const engine::batch& b, uint32_t block_size) {
  const decoder_config& c = model_->config();
  n_tokens_ = b.num_tokens;
  ids_.clear();
  positions_.clear();
  slots_.clear();
  seqs_.clear();
  sample_tokens_.clear();
  sample_entries_.clear();
  embed_tokens_.clear();
  embed_entries_.clear();
  prompt_tokens_.clear();
  prompt_entries_.clear();
  for (uint32_t i = 0; i < b.entries.size(); ++i) {
    const auto& e = b.entries[i];
    if (e.fork_of) continue; // no tokens, no logits row of its own
    const auto first = static_cast<uint32_t>(ids_.size());
    const auto n = static_cast<uint32_t>(e.tokens.size());
    seqs_.push_back({first, n, e.start_pos, e.block_table.data(), static_cast<uint32_t>(e.block_table.size())});
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t pos = e.start_pos + j;
      ids_.push_back(e.tokens[j]);
      positions_.push_back(pos);
      slots_.push_back(e.block_table[pos / block_size] * block_size + pos % block_size);
    }
    if (e.sample) {
      sample_tokens_.push_back(first + n - 1);
      sample_entries_.push_back(i);
    }
    if (e.embed) {
      embed_tokens_.push_back(first + n - 1);
      embed_entries_.push_back(i);
    }
    for (uint32_t j = 0; j < e.prompt_targets.size(); ++j) {
      prompt_tokens_.push_back(first + j);
      prompt_entries_.push_back(i);
    }
  }
  const size_t T = n_tokens_;
  const size_t qkv = size_t(c.n_head + 2 * c.n_kv_head) * c.head_dim;
  auto fit = [](auto& v, size_t n) {
    if (v.size() < n) v.resize(n);
  };
  fit(x_, T * c.n_embd);
  fit(h_, T * c.n_embd);
  fit(qkv_, T * qkv);
  fit(attn_, T * c.n_head * c.head_dim);
  fit(tmp_, T * c.n_embd);
  if (c.is_moe()) {
    const moe_config& m = c.moe;
    const size_t pairs = T * m.n_expert_used;
    fit(router_, T * m.n_expert);
    fit(expert_, pairs);
    fit(expert_weight_, pairs);
    fit(expert_start_, m.n_expert + 1);
    fit(pair_token_, pairs);
    fit(pair_row_, pairs);
    fit(xe_, pairs * c.n_embd);
    fit(ye_, pairs * c.n_embd);
    if (m.n_ff_shared > 0) fit(ys_, T * c.n_embd);
    fit(shared_gate_, T);
    fit(gu_, std::max(pairs * 2 * m.n_ff_expert, T * 2 * m.n_ff_shared));
    fit(act_, std::max(pairs * m.n_ff_expert, T * m.n_ff_shared));
  } else {
    fit(gu_, T * 2 * c.n_ff);
    fit(act_, T * c.n_ff);
  }
  fit(hs_, sample_tokens_.size() * c.n_embd);
  fit(logits_, sample_tokens_.size() * c.n_vocab);
  fit(he_, embed_tokens_.size() * c.n_embd);
  fit(hp_, prompt_tokens_.size() * c.n_embd);
}

void decoder_forward::matmul(const float* x, size_t x_stride, uint32_t n_tokens, std::span<const weight_matrix> w,
                             float* y, size_t y_stride) {
  kr::matmul({x, x_stride, n_tokens, w, y, y_stride, &pool_, &workspace_, options_.fp32_activations});
}

template <class Fn>
void decoder_forward::for_chunks(uint32_t n, Fn&& fn) {
  constexpr uint32_t chunk = 8;
  const uint32_t n_chunks = (n + chunk - 1) / chunk;
  pool_.parallel_for(n_chunks, [&](uint32_t i) { fn(i * chunk, std::min(n, (i + 1) * chunk)); });
}

void decoder_forward::add_bias(float* y, size_t stride, const std::vector<float>& bias) {
  if (bias.empty()) return;
  for_chunks(n_tokens_, [&](uint32_t t0, uint32_t t1) {
    kr::bias_add({y + size_t(t0) * stride, stride, bias.data(), t1 - t0, static_cast<uint32_t>(bias.size())});
  });
}

void decoder_forward::attention(const decoder_layer_weights& w, const kr::paged_kv_view& kv) {
  const decoder_config& c = model_->config();
  const uint32_t E = c.n_embd, D = c.head_dim, QD = c.n_head * D, KVD = c.n_kv_head * D;
  const uint32_t QKV = QD + 2 * KVD, T = n_tokens_;
  const weight_matrix qkv_w[] = {w.wq, w.wk, w.wv};
  matmul(h_.data(), E, T, qkv_w, qkv_.data(), QKV);
  for_chunks(T, [&](uint32_t t0, uint32_t t1) {
    float* q = qkv_.data() + size_t(t0) * QKV;
    if (!w.bq.empty()) {
      kr::bias_add({q, QKV, w.bq.data(), t1 - t0, QD});
      kr::bias_add({q + QD, QKV, w.bk.data(), t1 - t0, KVD});
      kr::bias_add({q + QD + KVD, QKV, w.bv.data(), t1 - t0, KVD});
    }
    if (!w.q_norm.empty()) { // Qwen3: RMSNorm over each head, before RoPE
      for (uint32_t t = 0; t < t1 - t0; ++t) {
        float* head = q + size_t(t) * QKV;
        kr::rms_norm({head, D, nullptr, 0, w.q_norm.data(), head, D, c.n_head, D, c.rms_eps});
        kr::rms_norm({head + QD, D, nullptr, 0, w.k_norm.data(), head + QD, D, c.n_kv_head, D, c.rms_eps});
      }
    }
    kr::rope({q, QKV, t1 - t0, c.n_head, D, positions_.data() + t0, &rope_, c.rope});
    kr::rope({q + QD, QKV, t1 - t0, c.n_kv_head, D, positions_.data() + t0, &rope_, c.rope});
  });
  kr::kv_store({qkv_.data() + QD, QKV, qkv_.data() + QD + KVD, QKV, slots_.data(), T, kv});
  kr::paged_attention({qkv_.data(), QKV, attn_.data(), QD, c.n_head, 1.0f / std::sqrt(float(D)), seqs_, kv, &pool_});
  matmul(attn_.data(), QD, T, {&w.wo, 1}, tmp_.data(), E);
  add_bias(tmp_.data(), E, w.bo);
}

void decoder_forward::ffn_dense(const decoder_layer_weights& w) {
  const decoder_config& c = model_->config();
  const uint32_t E = c.n_embd, F = c.n_ff, T = n_tokens_;
  const weight_matrix gate_up[] = {w.w_gate, w.w_up};
  matmul(h_.data(), E, T, gate_up, gu_.data(), 2 * F);
  for_chunks(T, [&](uint32_t t0, uint32_t t1) {
    const float* g = gu_.data() + size_t(t0) * 2 * F;
    kr::swiglu({g, g + F, 2 * size_t(F), act_.data() + size_t(t0) * F, F, t1 - t0, F});
  });
  matmul(act_.data(), F, T, {&w.w_down, 1}, tmp_.data(), E);
}

void decoder_forward::ffn_moe(const moe_layer_weights& w) {
  const decoder_config& c = model_->config();
  const moe_config& m = c.moe;
  const uint32_t E = c.n_embd, F = m.n_ff_expert, T = n_tokens_, k = m.n_expert_used, pairs = T * k;
  matmul(h_.data(), E, T, {&w.router, 1}, router_.data(), m.n_expert);
  kr::moe_route({router_.data(), m.n_expert, T, m.n_expert, k, m.norm_topk, m.weights_scale, expert_.data(),
                 expert_weight_.data()});
  kr::moe_group({expert_.data(), pairs, k, m.n_expert, expert_start_.data(), pair_token_.data(), pair_row_.data()});
  for_chunks(pairs, [&](uint32_t p0, uint32_t p1) {
    for (uint32_t p = p0; p < p1; ++p) {
      std::copy_n(h_.data() + size_t(pair_token_[p]) * E, E, xe_.data() + size_t(p) * E);
    }
  });
  // Each expert runs its rows through gate|up, SwiGLU and down as one batch.
  for (uint32_t e = 0; e < m.n_expert; ++e) {
    const uint32_t p0 = expert_start_[e], n = expert_start_[e + 1] - p0;
    if (n == 0) continue;
    const weight_matrix gate_up[] = {w.gate.expert(e), w.up.expert(e)};
    matmul(xe_.data() + size_t(p0) * E, E, n, gate_up, gu_.data() + size_t(p0) * 2 * F, 2 * F);
  }
  for_chunks(pairs, [&](uint32_t p0, uint32_t p1) {
    const float* g = gu_.data() + size_t(p0) * 2 * F;
    kr::swiglu({g, g + F, 2 * size_t(F), act_.data() + size_t(p0) * F, F, p1 - p0, F});
  });
  for (uint32_t e = 0; e < m.n_expert; ++e) {
    const uint32_t p0 = expert_start_[e], n = expert_start_[e + 1] - p0;
    if (n == 0) continue;
    const weight_matrix down = w.down.expert(e);
    matmul(act_.data() + size_t(p0) * F, F, n, {&down, 1}, ye_.data() + size_t(p0) * E, E);
  }
  const bool shared = w.has_shared_expert();
  if (shared) shared_expert(w); // reuses gu_ and act_, free again
  // A token's output sums its experts in rank order, whatever else is batched.
  for_chunks(T, [&](uint32_t t0, uint32_t t1) {
    kr::moe_combine({ye_.data(), E, expert_weight_.data() + size_t(t0) * k, pair_row_.data() + size_t(t0) * k,
                     shared ? ys_.data() + size_t(t0) * E : nullptr, E, shared ? shared_gate_.data() + t0 : nullptr,
                     tmp_.data() + size_t(t0) * E, E, t1 - t0, k, E});
  });
}

void decoder_forward::shared_expert(const moe_layer_weights& w) {
  const decoder_config& c = model_->config();
  const uint32_t E = c.n_embd, F = c.moe.n_ff_shared, T = n_tokens_;
  matmul(h_.data(), E, T, {&w.shared_gate_inp, 1}, shared_gate_.data(), 1);
  const weight_matrix gate_up[] = {w.shared_gate, w.shared_up};
  matmul(h_.data(), E, T, gate_up, gu_.data(), 2 * F);
  for_chunks(T, [&](uint32_t t0, uint32_t t1) {
    const float* g = gu_.data() + size_t(t0) * 2 * F;
    kr::swiglu({g, g + F, 2 * size_t(F), act_.data() + size_t(t0) * F, F, t1 - t0, F});
  });
  matmul(act_.data(), F, T, {&w.shared_down, 1}, ys_.data(), E);
}

void decoder_forward::run_layer(uint32_t l, kv_cache& cache) {
  const decoder_config& c = model_->config();
  const decoder_layer_weights& w = model_->weights().layers[l];
  const uint32_t E = c.n_embd, T = n_tokens_;
  // x += previous sub-block output (none before layer 0); h = norm(x).
  const float* residual = l == 0 ? nullptr : tmp_.data();
  kr::rms_norm({x_.data(), E, residual, E, w.attn_norm.data(), h_.data(), E, T, E, c.rms_eps});
  attention(w, cache.layer_view(l));
  kr::rms_norm({x_.data(), E, tmp_.data(), E, w.ffn_norm.data(), h_.data(), E, T, E, c.rms_eps});
  if (c.is_moe()) {
    ffn_moe(w.moe);
  } else {
    ffn_dense(w);
  }
}

void decoder_forward::final_norm(std::span<const uint32_t> tokens, float* out) {
  const decoder_config& c = model_->config();
  const decoder_weights& w = model_->weights();
  const uint32_t E = c.n_embd;
  for (size_t s = 0; s < tokens.size(); ++s) {
    const size_t t = tokens[s];
    kr::rms_norm({x_.data() + t * E, E, tmp_.data() + t * E, E, w.output_norm.data(), out + s * E, E, 1, E,
                  c.rms_eps});
  }
}

void decoder_forward::run_head() {
  const decoder_config& c = model_->config();
  // Only the rows we sample or embed need the last residual add and the final norm.
  final_norm(embed_tokens_, he_.data());
  final_norm(prompt_tokens_, hp_.data()); // their logits: prompt_head()
  if (sample_tokens_.empty()) return;
  final_norm(sample_tokens_, hs_.data());
  const auto rows = static_cast<uint32_t>(sample_tokens_.size());
  matmul(hs_.data(), c.n_embd, rows, {&model_->weights().output, 1}, logits_.data(), c.n_vocab);
}

expected<forward_logits> decoder_forward::run(const engine::batch& b, kv_cache& cache) {
  const decoder_config& c = model_->config();
  const kv_cache_shape& kv = cache.shape();
  if (kv.n_layer != c.n_layer || kv.n_kv_head != c.n_kv_head || kv.head_dim != c.head_dim) {
    return make_error(errc::internal, "decoder_forward: KV cache shape does not match the model");
  }
  if (auto ok = check(b, kv); !ok) return ok.error();
  prepare(b, kv.block_size);
  if (n_tokens_ > 0) {
    kr::embedding({model_->weights().token_embd, ids_.data(), n_tokens_, x_.data(), c.n_embd});
    for (uint32_t l = 0; l < c.n_layer; ++l) run_layer(l, cache);
    run_head();
  }
  forward_logits out;
  out.n_vocab = c.n_vocab;
  out.data = {logits_.data(), sample_tokens_.size() * c.n_vocab};
  out.entry = sample_entries_;
  out.n_embd = c.n_embd;
  out.hidden = {he_.data(), embed_tokens_.size() * c.n_embd};
  out.hidden_entry = embed_entries_;
  out.prompt_entry = prompt_entries_;
  return out;
}

std::span<const float> decoder_forward::prompt_head(size_t row0, uint32_t rows) {
  const decoder_config& c = model_->config();
  if (prompt_logits_.size() < size_t(rows) * c.n_vocab) prompt_logits_.resize(size_t(rows) * c.n_vocab);
  matmul(hp_.data() + row0 * c.n_embd, c.n_embd, rows, {&model_->weights().output, 1}, prompt_logits_.data(),
         c.n_vocab);
  return {prompt_logits_.data(), size_t(rows) * c.n_vocab};
}

} // namespace dynamo::model
