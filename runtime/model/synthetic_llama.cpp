#include "runtime/model/synthetic_llama.hpp"

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/writer.hpp"

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace dynamo::model {
namespace {

std::vector<float> uniform(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

} // namespace

expected<std::shared_ptr<const gguf::file>> make_synthetic_llama(const synthetic_llama_options& o) {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "synthetic-llama");
  w.set_u32("llama.block_count", o.n_layer);
  w.set_u32("llama.context_length", o.context_length);
  w.set_u32("llama.embedding_length", o.n_embd);
  w.set_u32("llama.feed_forward_length", o.n_ff);
  w.set_u32("llama.attention.head_count", o.n_head);
  w.set_u32("llama.attention.head_count_kv", o.n_kv_head);
  w.set_f32("llama.rope.freq_base", o.rope_base);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", o.rms_eps);
  w.set_u32("llama.vocab_size", o.n_vocab);
  const uint32_t head_dim = o.n_head ? o.n_embd / o.n_head : 0;
  w.set_u32("llama.rope.dimension_count", head_dim);

  std::mt19937_64 rng(o.seed);
  auto matrix = [&](const std::string& name, uint32_t k, uint32_t rows, gguf::tensor_type t) {
    const float a = 1.0f / std::sqrt(static_cast<float>(k)) * std::sqrt(3.0f); // unit-variance outputs
    return w.add_tensor(name, {k, rows}, t, uniform(rng, size_t(k) * rows, -a, a));
  };
  auto norm = [&](const std::string& name) {
    return w.add_tensor(name, {o.n_embd}, gguf::tensor_type::f32, uniform(rng, o.n_embd, 0.8f, 1.2f));
  };
  // token_embd rows act as both inputs (unit scale) and, when tied, LM head.
  if (auto r = w.add_tensor("token_embd.weight", {o.n_embd, o.n_vocab}, o.embd_type,
                            uniform(rng, size_t(o.n_embd) * o.n_vocab, -1.0f, 1.0f));
      !r) {
    return r.error();
  }
  if (auto r = norm("output_norm.weight"); !r) return r.error();
  if (!o.tied_embeddings) {
    if (auto r = matrix("output.weight", o.n_embd, o.n_vocab, o.embd_type); !r) return r.error();
  }
  const uint32_t q_rows = o.n_head * head_dim, kv_rows = o.n_kv_head * head_dim;
  for (uint32_t l = 0; l < o.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (auto r : {norm(p + "attn_norm.weight"), matrix(p + "attn_q.weight", o.n_embd, q_rows, o.weight_type),
                   matrix(p + "attn_k.weight", o.n_embd, kv_rows, o.weight_type),
                   matrix(p + "attn_v.weight", o.n_embd, kv_rows, o.weight_type),
                   matrix(p + "attn_output.weight", q_rows, o.n_embd, o.weight_type), norm(p + "ffn_norm.weight"),
                   matrix(p + "ffn_gate.weight", o.n_embd, o.n_ff, o.weight_type),
                   matrix(p + "ffn_up.weight", o.n_embd, o.n_ff, o.weight_type),
                   matrix(p + "ffn_down.weight", o.n_ff, o.n_embd, o.weight_type)}) {
      if (!r) return r.error();
    }
  }
  return gguf::file::from_bytes(w.bytes());
}

} // namespace dynamo::model
