#include "runtime/model/llama_model.hpp"

#include "runtime/gguf/gguf_file.hpp"

namespace dynamo::model {
namespace {

using kernels::ref::weight_type;

struct loader {
  const gguf::file& f;

  [[nodiscard]] caf::error bad(const std::string& name, const std::string& what) const {
    return make_error(errc::corrupt_file, "GGUF tensor '" + name + "' " + what);
  }

  /// A 2-D tensor of exactly [rows, k] in a type the kernels compute with.
  [[nodiscard]] expected<weight_matrix> matrix(const std::string& name, uint64_t k, uint64_t rows) const {
    const gguf::tensor_info* t = f.find_tensor(name);
    if (t == nullptr) return bad(name, "is missing");
    if (t->ne[0] != k || t->n_rows() != rows || t->ne[2] != 1 || t->ne[3] != 1) {
      return bad(name, "has shape [" + std::to_string(t->ne[0]) + ", " + std::to_string(t->ne[1]) + "], expected [" +
                           std::to_string(k) + ", " + std::to_string(rows) + "] (ne0 first)");
    }
    const auto id = static_cast<uint32_t>(t->type);
    if (!kernels::ref::is_supported(id)) {
      return make_error(errc::unsupported, "GGUF tensor '" + name + "' has type " + gguf::type_name(t->type) +
                                               ", which the CPU kernels do not support");
    }
    const auto type = static_cast<weight_type>(id);
    if (k % kernels::ref::block_elems(type) != 0) return bad(name, "row length is not a whole number of blocks");
    const auto data = f.tensor_data(*t);
    if (data.size() != kernels::ref::row_bytes(type, static_cast<uint32_t>(k)) * rows) {
      return bad(name, "has " + std::to_string(data.size()) + " bytes, not what its shape and type need");
    }
    return weight_matrix{type, static_cast<uint32_t>(k), static_cast<uint32_t>(rows), data.data()};
  }

  /// A 1-D weight of n elements, widened to fp32.
  [[nodiscard]] expected<std::vector<float>> vector(const std::string& name, uint64_t n) const {
    const gguf::tensor_info* t = f.find_tensor(name);
    if (t == nullptr) return bad(name, "is missing");
    if (t->n_elements() != n || t->ne[0] != n) {
      return bad(name, "has " + std::to_string(t->n_elements()) + " elements, expected " + std::to_string(n));
    }
    auto v = f.dequantize(*t);
    if (!v) return make_error(code_of(v.error()), "GGUF tensor '" + name + "': " + message_of(v.error()));
    return std::move(*v);
  }
};

expected<llama_layer_weights> load_layer(const loader& l, const llama_config& c, uint32_t i) {
  const std::string p = "blk." + std::to_string(i) + ".";
  const uint64_t q_rows = uint64_t(c.n_head) * c.head_dim, kv_rows = uint64_t(c.n_kv_head) * c.head_dim;
  llama_layer_weights w;
  const struct {
    const char* name;
    uint64_t k, rows;
    weight_matrix* out;
  } matrices[] = {{"attn_q.weight", c.n_embd, q_rows, &w.wq},      {"attn_k.weight", c.n_embd, kv_rows, &w.wk},
                  {"attn_v.weight", c.n_embd, kv_rows, &w.wv},     {"attn_output.weight", q_rows, c.n_embd, &w.wo},
                  {"ffn_gate.weight", c.n_embd, c.n_ff, &w.w_gate}, {"ffn_up.weight", c.n_embd, c.n_ff, &w.w_up},
                  {"ffn_down.weight", c.n_ff, c.n_embd, &w.w_down}};
  for (const auto& m : matrices) {
    auto r = l.matrix(p + m.name, m.k, m.rows);
    if (!r) return r.error();
    *m.out = *r;
  }
  for (auto [name, out] : {std::pair{"attn_norm.weight", &w.attn_norm}, {"ffn_norm.weight", &w.ffn_norm}}) {
    auto r = l.vector(p + name, c.n_embd);
    if (!r) return r.error();
    *out = std::move(*r);
  }
  return w;
}

expected<llama_weights> load_weights(const gguf::file& f, const llama_config& c) {
  const loader l{f};
  llama_weights w;
  auto embd = l.matrix("token_embd.weight", c.n_embd, c.n_vocab);
  if (!embd) return embd.error();
  w.token_embd = *embd;
  auto norm = l.vector("output_norm.weight", c.n_embd);
  if (!norm) return norm.error();
  w.output_norm = std::move(*norm);
  if (f.find_tensor("output.weight") != nullptr) {
    auto out = l.matrix("output.weight", c.n_embd, c.n_vocab);
    if (!out) return out.error();
    w.output = *out;
  } else {
    w.output = w.token_embd; // tied embeddings (SmolLM2): the LM head is token_embd
    w.tied_embeddings = true;
  }
  w.layers.reserve(c.n_layer);
  for (uint32_t i = 0; i < c.n_layer; ++i) {
    auto layer = load_layer(l, c, i);
    if (!layer) return layer.error();
    w.layers.push_back(std::move(*layer));
  }
  return w;
}

} // namespace

expected<std::shared_ptr<const llama_model>> llama_model::load(const std::string& path) {
  auto f = gguf::file::open(path);
  if (!f) return f.error();
  return from_file(std::move(*f));
}

expected<std::shared_ptr<const llama_model>> llama_model::from_file(std::shared_ptr<const gguf::file> f) {
  if (f == nullptr) return make_error(errc::invalid_argument, "llama_model::from_file: null file");
  auto config = read_llama_config(*f);
  if (!config) return config.error();
  auto weights = load_weights(*f, *config);
  if (!weights) return weights.error();
  std::shared_ptr<llama_model> m(new llama_model());
  m->file_ = std::move(f);
  m->config_ = std::move(*config);
  m->weights_ = std::move(*weights);
  return std::shared_ptr<const llama_model>(std::move(m));
}

size_t llama_model::weight_bytes() const noexcept {
  auto bytes = [](const weight_matrix& w) { return kernels::ref::row_bytes(w.type, w.k) * w.n; };
  size_t total = bytes(weights_.output);
  for (const auto& l : weights_.layers) {
    total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.w_gate) + bytes(l.w_up) +
             bytes(l.w_down);
  }
  return total;
}

} // namespace dynamo::model
