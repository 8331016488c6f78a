#include "runtime/model/llama_forward.hpp"

#include "kernels/reference/embedding.hpp"
#include "kernels/reference/kv_store.hpp"
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

llama_forward::llama_forward(std::shared_ptr<const llama_model> model, kr::thread_pool& pool,
                             forward_options options)
    : model_(std::move(model)), pool_(pool), options_(options) {
  const llama_config& c = model_->config();
  rope_ = kr::make_rope_table(c.rot_dim, c.context_length, c.rope_base);
}

expected<void> llama_forward::check(const engine::batch& b, const kv_cache_shape& kv) const {
  const llama_config& c = model_->config();
  uint64_t total = 0;
  for (const auto& e : b.entries) {
    if (e.tokens.empty()) return bad_entry(e, "no tokens");
    const uint64_t end = uint64_t(e.start_pos) + e.tokens.size();
    if (end > c.context_length) {
      return bad_entry(e, "positions up to " + std::to_string(end) + " exceed the context length " +
                              std::to_string(c.context_length));
    }
    const uint64_t blocks_needed = (end + kv.block_size - 1) / kv.block_size;
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
    total += e.tokens.size();
  }
  if (total != b.num_tokens) {
    return make_error(errc::invalid_argument, "batch num_tokens " + std::to_string(b.num_tokens) +
                                                  " but its entries hold " + std::to_string(total));
  }
  return {};
}

void llama_forward::prepare(const engine::batch& b, uint32_t block_size) {
  const llama_config& c = model_->config();
  n_tokens_ = b.num_tokens;
  ids_.clear();
  positions_.clear();
  slots_.clear();
  seqs_.clear();
  sample_tokens_.clear();
  sample_entries_.clear();
  for (uint32_t i = 0; i < b.entries.size(); ++i) {
    const auto& e = b.entries[i];
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
  }
  const size_t T = n_tokens_;
  const size_t qkv = size_t(c.n_head + 2 * c.n_kv_head) * c.head_dim;
  auto fit = [](std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  };
  fit(x_, T * c.n_embd);
  fit(h_, T * c.n_embd);
  fit(qkv_, T * qkv);
  fit(attn_, T * c.n_head * c.head_dim);
  fit(tmp_, T * c.n_embd);
  fit(gu_, T * 2 * c.n_ff);
  fit(act_, T * c.n_ff);
  fit(hs_, sample_tokens_.size() * c.n_embd);
  fit(logits_, sample_tokens_.size() * c.n_vocab);
}

void llama_forward::matmul(const float* x, size_t x_stride, uint32_t n_tokens, std::span<const weight_matrix> w,
                           float* y, size_t y_stride) {
  kr::matmul({x, x_stride, n_tokens, w, y, y_stride, &pool_, &workspace_, options_.fp32_activations});
}

template <class Fn>
void llama_forward::for_token_chunks(Fn&& fn) {
  constexpr uint32_t chunk = 8;
  const uint32_t n_chunks = (n_tokens_ + chunk - 1) / chunk;
  pool_.parallel_for(n_chunks, [&](uint32_t i) { fn(i * chunk, std::min(n_tokens_, (i + 1) * chunk)); });
}

void llama_forward::run_layer(uint32_t l, kv_cache& cache) {
  const llama_config& c = model_->config();
  const llama_layer_weights& w = model_->weights().layers[l];
  const uint32_t E = c.n_embd, QD = c.n_head * c.head_dim, KVD = c.n_kv_head * c.head_dim;
  const uint32_t QKV = QD + 2 * KVD, F = c.n_ff, T = n_tokens_;
  const kr::paged_kv_view kv = cache.layer_view(l);

  // x += previous sub-block output (none before layer 0); h = norm(x).
  const float* residual = l == 0 ? nullptr : tmp_.data();
  kr::rms_norm({x_.data(), E, residual, E, w.attn_norm.data(), h_.data(), E, T, E, c.rms_eps});
  const weight_matrix qkv_w[] = {w.wq, w.wk, w.wv};
  matmul(h_.data(), E, T, qkv_w, qkv_.data(), QKV);
  for_token_chunks([&](uint32_t t0, uint32_t t1) {
    float* q = qkv_.data() + size_t(t0) * QKV;
    kr::rope({q, QKV, t1 - t0, c.n_head, c.head_dim, positions_.data() + t0, &rope_, c.rope});
    kr::rope({q + QD, QKV, t1 - t0, c.n_kv_head, c.head_dim, positions_.data() + t0, &rope_, c.rope});
  });
  kr::kv_store({qkv_.data() + QD, QKV, qkv_.data() + QD + KVD, QKV, slots_.data(), T, kv});
  kr::paged_attention({qkv_.data(), QKV, attn_.data(), QD, c.n_head, 1.0f / std::sqrt(float(c.head_dim)), seqs_,
                       kv, &pool_});
  matmul(attn_.data(), QD, T, {&w.wo, 1}, tmp_.data(), E);

  kr::rms_norm({x_.data(), E, tmp_.data(), E, w.ffn_norm.data(), h_.data(), E, T, E, c.rms_eps});
  const weight_matrix gate_up[] = {w.w_gate, w.w_up};
  matmul(h_.data(), E, T, gate_up, gu_.data(), 2 * F);
  for_token_chunks([&](uint32_t t0, uint32_t t1) {
    const float* g = gu_.data() + size_t(t0) * 2 * F;
    kr::swiglu({g, g + F, 2 * size_t(F), act_.data() + size_t(t0) * F, F, t1 - t0, F});
  });
  matmul(act_.data(), F, T, {&w.w_down, 1}, tmp_.data(), E);
}

void llama_forward::run_head() {
  const llama_config& c = model_->config();
  const llama_weights& w = model_->weights();
  const uint32_t E = c.n_embd;
  // Only the rows we sample need the last residual add and the final norm.
  for (size_t s = 0; s < sample_tokens_.size(); ++s) {
    const size_t t = sample_tokens_[s];
    kr::rms_norm({x_.data() + t * E, E, tmp_.data() + t * E, E, w.output_norm.data(), hs_.data() + s * E, E, 1, E,
                  c.rms_eps});
  }
  const auto rows = static_cast<uint32_t>(sample_tokens_.size());
  matmul(hs_.data(), E, rows, {&w.output, 1}, logits_.data(), c.n_vocab);
}

expected<forward_logits> llama_forward::run(const engine::batch& b, kv_cache& cache) {
  const llama_config& c = model_->config();
  const kv_cache_shape& kv = cache.shape();
  if (kv.n_layer != c.n_layer || kv.n_kv_head != c.n_kv_head || kv.head_dim != c.head_dim) {
    return make_error(errc::internal, "llama_forward: KV cache shape does not match the model");
  }
  if (auto ok = check(b, kv); !ok) return ok.error();
  prepare(b, kv.block_size);
  if (n_tokens_ > 0) {
    kr::embedding({model_->weights().token_embd, ids_.data(), n_tokens_, x_.data(), c.n_embd});
    for (uint32_t l = 0; l < c.n_layer; ++l) run_layer(l, cache);
    if (!sample_tokens_.empty()) run_head();
  }
  forward_logits out;
  out.n_vocab = c.n_vocab;
  out.data = {logits_.data(), sample_tokens_.size() * c.n_vocab};
  out.entry = sample_entries_;
  return out;
}

} // namespace dynamo::model
