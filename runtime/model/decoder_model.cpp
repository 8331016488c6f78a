#include "runtime/model/decoder_model.hpp"

#include "runtime/gguf/gguf_file.hpp"

#include "kernels/reference/repack.hpp"
#include "kernels/reference/thread_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>

namespace dynamo::model {
namespace {

/// Reads tensors by name and remembers which ones it read, so that a tensor
/// the architecture does not use is an error rather than silently ignored
/// (llama.cpp refuses such files too).
class loader {
public:
  explicit loader(const gguf::file& f) : f_(f), used_(f.tensors().size(), false) {}

  [[nodiscard]] bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

  /// A tensor of exactly `shape` (ne0 first; trailing dims 1) in a type the
  /// kernels compute with, as a matrix of shape[1] * shape[2] rows.
  [[nodiscard]] expected<weight_matrix> matrix(const std::string& name, std::array<uint64_t, 3> shape) {
    auto t = take(name);
    if (!t) return t.error();
    const gguf::tensor_info& info = **t;
    if (info.ne[0] != shape[0] || info.ne[1] != shape[1] || info.ne[2] != shape[2] || info.ne[3] != 1) {
      return bad(name, "has shape " + dims(info.ne) + ", expected " + dims({shape[0], shape[1], shape[2], 1}) +
                           " (ne0 first)");
    }
    if (!kernels::ref::is_computed(info.type)) {
      return make_error(errc::unsupported, "GGUF tensor '" + name + "' has type " +
                                               kernels::ref::type_name(info.type) +
                                               ", which the CPU kernels do not support");
    }
    const uint64_t k = shape[0], rows = shape[1] * shape[2];
    const auto rb = kernels::ref::row_bytes(info.type, k);
    if (!rb) return bad(name, "row length is not a whole number of blocks");
    const auto data = f_.tensor_data(info);
    if (data.size() != *rb * rows) {
      return bad(name, "has " + std::to_string(data.size()) + " bytes, not what its shape and type need");
    }
    return weight_matrix{info.type, static_cast<uint32_t>(k), static_cast<uint32_t>(rows), data.data()};
  }

  [[nodiscard]] expected<weight_matrix> matrix(const std::string& name, uint64_t k, uint64_t rows) {
    return matrix(name, {k, rows, 1});
  }

  /// A 3-D tensor [k, rows, n_expert] of per-expert matrices.
  [[nodiscard]] expected<expert_stack> stack(const std::string& name, uint64_t k, uint64_t rows, uint64_t n_expert) {
    auto m = matrix(name, {k, rows, n_expert});
    if (!m) return m.error();
    return expert_stack{*m, static_cast<uint32_t>(rows)};
  }

  /// A 1-D weight of n elements, widened to fp32.
  [[nodiscard]] expected<std::vector<float>> vector(const std::string& name, uint64_t n) {
    auto t = take(name);
    if (!t) return t.error();
    const gguf::tensor_info& info = **t;
    if (info.n_elements() != n || info.ne[0] != n) {
      return bad(name, "has " + std::to_string(info.n_elements()) + " elements, expected " + std::to_string(n));
    }
    auto v = f_.dequantize(info);
    if (!v) return make_error(code_of(v.error()), "GGUF tensor '" + name + "': " + message_of(v.error()));
    return std::move(*v);
  }

  /// vector() when the tensor exists, else an empty vector.
  [[nodiscard]] expected<std::vector<float>> optional_vector(const std::string& name, uint64_t n) {
    if (!has(name)) return std::vector<float>{};
    return vector(name, n);
  }

  /// Errors when the file holds a tensor nothing asked for.
  [[nodiscard]] expected<void> check_all_used(std::string_view arch) const {
    const auto tensors = f_.tensors();
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!used_[i]) {
        return make_error(errc::unsupported, "GGUF tensor '" + tensors[i].name + "' is not part of the " +
                                                 std::string(arch) + " model as implemented here");
      }
    }
    return {};
  }

private:
  [[nodiscard]] expected<const gguf::tensor_info*> take(const std::string& name) {
    const gguf::tensor_info* t = f_.find_tensor(name);
    if (t == nullptr) return bad(name, "is missing");
    used_[static_cast<size_t>(t - f_.tensors().data())] = true;
    return t;
  }

  [[nodiscard]] static caf::error bad(const std::string& name, const std::string& what) {
    return make_error(errc::corrupt_file, "GGUF tensor '" + name + "' " + what);
  }

  [[nodiscard]] static std::string dims(const std::array<uint64_t, 4>& ne) {
    std::string s = "[" + std::to_string(ne[0]);
    size_t n = 4;
    while (n > 2 && ne[n - 1] == 1) --n;
    for (size_t i = 1; i < n; ++i) s += ", " + std::to_string(ne[i]);
    return s + "]";
  }

  const gguf::file& f_;
  std::vector<bool> used_;
};

expected<void> load_attention(loader& l, const decoder_config& c, const std::string& p, decoder_layer_weights& w) {
  const uint64_t q_rows = uint64_t(c.n_head) * c.head_dim, kv_rows = uint64_t(c.n_kv_head) * c.head_dim;
  const struct {
    const char* name;
    uint64_t k, rows;
    weight_matrix* out;
  } matrices[] = {{"attn_q.weight", c.n_embd, q_rows, &w.wq},
                  {"attn_k.weight", c.n_embd, kv_rows, &w.wk},
                  {"attn_v.weight", c.n_embd, kv_rows, &w.wv},
                  {"attn_output.weight", q_rows, c.n_embd, &w.wo}};
  for (const auto& m : matrices) {
    auto r = l.matrix(p + m.name, m.k, m.rows);
    if (!r) return r.error();
    *m.out = *r;
  }
  const architecture_traits& t = c.traits();
  // Biases are optional everywhere (as llama.cpp); Q/K norms exist only in
  // architectures that have them (elsewhere they are unused tensors).
  enum class need { required, optional, never };
  const need bias = t.qkv_bias ? need::required : need::optional, norm = t.qk_norm ? need::required : need::never;
  const struct {
    const char* name;
    uint64_t n;
    need mode;
    std::vector<float>* out;
  } vectors[] = {{"attn_norm.weight", c.n_embd, need::required, &w.attn_norm},
                 {"attn_q.bias", q_rows, bias, &w.bq},
                 {"attn_k.bias", kv_rows, bias, &w.bk},
                 {"attn_v.bias", kv_rows, bias, &w.bv},
                 {"attn_output.bias", c.n_embd, need::optional, &w.bo},
                 {"attn_q_norm.weight", c.head_dim, norm, &w.q_norm},
                 {"attn_k_norm.weight", c.head_dim, norm, &w.k_norm}};
  for (const auto& v : vectors) {
    if (v.mode == need::never) continue;
    auto r = v.mode == need::required ? l.vector(p + v.name, v.n) : l.optional_vector(p + v.name, v.n);
    if (!r) return r.error();
    *v.out = std::move(*r);
  }
  if (w.bq.empty() != w.bk.empty() || w.bq.empty() != w.bv.empty()) {
    return make_error(errc::corrupt_file, "GGUF layer '" + p + "' has some but not all of the Q/K/V biases");
  }
  return {};
}

expected<void> load_moe(loader& l, const decoder_config& c, const std::string& p, moe_layer_weights& w) {
  const moe_config& m = c.moe;
  auto router = l.matrix(p + "ffn_gate_inp.weight", c.n_embd, m.n_expert);
  if (!router) return router.error();
  w.router = *router;
  const struct {
    const char* name;
    uint64_t k, rows;
    expert_stack* out;
  } stacks[] = {{"ffn_gate_exps.weight", c.n_embd, m.n_ff_expert, &w.gate},
                {"ffn_up_exps.weight", c.n_embd, m.n_ff_expert, &w.up},
                {"ffn_down_exps.weight", m.n_ff_expert, c.n_embd, &w.down}};
  for (const auto& s : stacks) {
    auto r = l.stack(p + s.name, s.k, s.rows, m.n_expert);
    if (!r) return r.error();
    *s.out = *r;
  }
  if (!c.traits().shared_expert) return {};
  const struct {
    const char* name;
    uint64_t k, rows;
    weight_matrix* out;
  } shared[] = {{"ffn_gate_inp_shexp.weight", c.n_embd, 1, &w.shared_gate_inp},
                {"ffn_gate_shexp.weight", c.n_embd, m.n_ff_shared, &w.shared_gate},
                {"ffn_up_shexp.weight", c.n_embd, m.n_ff_shared, &w.shared_up},
                {"ffn_down_shexp.weight", m.n_ff_shared, c.n_embd, &w.shared_down}};
  for (const auto& s : shared) {
    auto r = l.matrix(p + s.name, s.k, s.rows);
    if (!r) return r.error();
    *s.out = *r;
  }
  return {};
}

expected<decoder_layer_weights> load_layer(loader& l, const decoder_config& c, uint32_t i) {
  const std::string p = "blk." + std::to_string(i) + ".";
  decoder_layer_weights w;
  if (auto r = load_attention(l, c, p, w); !r) return r.error();
  auto norm = l.vector(p + "ffn_norm.weight", c.n_embd);
  if (!norm) return norm.error();
  w.ffn_norm = std::move(*norm);
  if (c.is_moe()) {
    if (auto r = load_moe(l, c, p, w.moe); !r) return r.error();
    return w;
  }
  const struct {
    const char* name;
    uint64_t k, rows;
    weight_matrix* out;
  } ffn[] = {{"ffn_gate.weight", c.n_embd, c.n_ff, &w.w_gate},
             {"ffn_up.weight", c.n_embd, c.n_ff, &w.w_up},
             {"ffn_down.weight", c.n_ff, c.n_embd, &w.w_down}};
  for (const auto& m : ffn) {
    auto r = l.matrix(p + m.name, m.k, m.rows);
    if (!r) return r.error();
    *m.out = *r;
  }
  return w;
}

expected<decoder_weights> load_weights(const gguf::file& f, const decoder_config& c) {
  loader l(f);
  decoder_weights w;
  auto embd = l.matrix("token_embd.weight", c.n_embd, c.n_vocab);
  if (!embd) return embd.error();
  w.token_embd = *embd;
  auto norm = l.vector("output_norm.weight", c.n_embd);
  if (!norm) return norm.error();
  w.output_norm = std::move(*norm);
  if (l.has("output.weight")) {
    auto out = l.matrix("output.weight", c.n_embd, c.n_vocab);
    if (!out) return out.error();
    w.output = *out;
  } else {
    w.output = w.token_embd; // tied embeddings (SmolLM2, Qwen3-0.6B): the LM head is token_embd
    w.tied_embeddings = true;
  }
  auto freqs = l.optional_vector("rope_freqs.weight", c.rot_dim / 2);
  if (!freqs) return freqs.error();
  w.rope_freqs = std::move(*freqs);
  for (float v : w.rope_freqs) {
    if (!(v > 0.0f)) return make_error(errc::corrupt_file, "GGUF tensor 'rope_freqs.weight' holds a non-positive factor");
  }
  w.layers.reserve(c.n_layer);
  for (uint32_t i = 0; i < c.n_layer; ++i) {
    auto layer = load_layer(l, c, i);
    if (!layer) return layer.error();
    w.layers.push_back(std::move(*layer));
  }
  if (auto ok = l.check_all_used(c.arch_name()); !ok) return ok.error();
  return w;
}

/// Every matrix the matmul reads (token_embd only as the tied LM head).
template <class Fn>
void for_each_matmul_weight(decoder_weights& w, Fn fn) {
  fn(w.output);
  for (auto& l : w.layers) {
    for (weight_matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.moe.router,
                             &l.moe.gate.stacked, &l.moe.up.stacked, &l.moe.down.stacked, &l.moe.shared_gate_inp,
                             &l.moe.shared_gate, &l.moe.shared_up, &l.moe.shared_down}) {
      fn(*m);
    }
  }
}

/// The types whose lane kernels were measured faster than their row kernels
/// (docs/BENCHMARKS.md, "Lane layout for Q4_K and Q6_K", "... for Q4_0,
/// IQ4_NL and IQ4_XS", "... for Q5_K and Q8_0" and "Lane groups for rows of
/// k % 256 != 0, and for Q4_1, Q5_0, Q5_1").
bool repack_pays(kernels::ref::tensor_type t) { return kernels::ref::has_lanes(t); }

using owned_bytes = std::unique_ptr<std::byte, void (*)(void*)>;

/// `bytes` of memory in 2 MB-aligned huge pages where the kernel grants them
/// (transparent huge pages on madvise): the matmul streams these copies, and
/// from 4 KB pages it ran ~10% slower than from the mapped file, whose page
/// cache this kernel maps in large folios.
owned_bytes huge_page_bytes(size_t bytes) {
  constexpr size_t huge = size_t{2} << 20;
  const size_t size = (bytes + huge - 1) / huge * huge;
  owned_bytes p(static_cast<std::byte*>(std::aligned_alloc(huge, size)), std::free);
#if defined(MADV_HUGEPAGE)
  if (p != nullptr) (void)::madvise(p.get(), size, MADV_HUGEPAGE);
#endif
  return p;
}

/// Attaches a lane copy to every matrix of a type where it pays, all in one
/// huge-page arena (64-byte aligned each); returns the arena (null when
/// nothing pays) and its used bytes. Runs on `threads` threads (a 0.6B model's
/// repacked matrices take ~1 s on one) in blocks of rows claimed in matrix
/// order. Each block's whole source pages, and a matrix's boundary pages once
/// its last block is done, leave the process (gguf::file::release_pages): the
/// peak holds the copies and the blocks in flight, not both copies.
expected<owned_bytes> repack(decoder_weights& w, const gguf::file& f, unsigned threads, size_t& total) {
  std::vector<weight_matrix*> ms;
  total = 0;
  for_each_matmul_weight(w, [&](weight_matrix& m) {
    if (m.data == nullptr || !repack_pays(m.type) || !kernels::ref::lanes_fit(m.type, m.k)) return;
    m.lanes_stride = kernels::ref::lanes_row_bytes(m.type, m.k);
    total += (m.lanes_stride * m.n + 63) / 64 * 64;
    ms.push_back(&m);
  });
  if (ms.empty()) return owned_bytes(nullptr, std::free);
  owned_bytes arena = huge_page_bytes(total);
  if (arena == nullptr) return make_error(errc::io_error, "out of memory for the repacked weight matrices");
  struct task {
    const weight_matrix* m;
    uint32_t r0, r1;
    std::byte* dst;               ///< the matrix's copy
    std::atomic<uint32_t>* left;  ///< the matrix's blocks not yet done
  };
  std::vector<task> tasks;
  std::vector<std::atomic<uint32_t>> left(ms.size());
  constexpr uint32_t rows_per_task = 512;
  size_t at = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    weight_matrix* m = ms[i];
    std::byte* dst = arena.get() + at;
    m->lanes = dst;
    at += (m->lanes_stride * m->n + 63) / 64 * 64;
    left[i] = (m->n + rows_per_task - 1) / rows_per_task;
    for (uint32_t r = 0; r < m->n; r += rows_per_task)
      tasks.push_back({m, r, std::min(m->n, r + rows_per_task), dst, &left[i]});
  }
  kernels::ref::thread_pool pool(threads);
  pool.parallel_for(static_cast<uint32_t>(tasks.size()), [&](uint32_t i) {
    const task& t = tasks[i];
    kernels::ref::repack_lanes_rows(*t.m, t.r0, t.r1, t.dst);
    const auto* src = static_cast<const std::byte*>(t.m->data);
    f.release_pages({src + t.m->stride() * t.r0, t.m->stride() * (t.r1 - t.r0)});
    if (t.left->fetch_sub(1, std::memory_order_acq_rel) == 1) f.release_pages({src, t.m->stride() * t.m->n});
  });
  if (w.tied_embeddings) { // the lookup reads the copy too (kernels/reference/embedding.hpp): released pages stay out
    w.token_embd.lanes = w.output.lanes;
    w.token_embd.lanes_stride = w.output.lanes_stride;
  }
  return arena;
}

size_t bytes(const weight_matrix& w) noexcept {
  return w.data == nullptr ? 0 : w.stride() * w.n;
}

} // namespace

expected<std::shared_ptr<const decoder_model>> decoder_model::load(const std::string& path,
                                                                   const load_options& options) {
  auto f = gguf::file::open(path);
  if (!f) return f.error();
  return from_file(std::move(*f), options);
}

expected<std::shared_ptr<const decoder_model>> decoder_model::from_file(std::shared_ptr<const gguf::file> f,
                                                                        const load_options& options) {
  if (f == nullptr) return make_error(errc::invalid_argument, "decoder_model::from_file: null file");
  auto config = read_decoder_config(*f);
  if (!config) return config.error();
  auto weights = load_weights(*f, *config);
  if (!weights) return weights.error();
  std::shared_ptr<decoder_model> m(new decoder_model());
  m->file_ = std::move(f);
  m->config_ = std::move(*config);
  m->weights_ = std::move(*weights);
  if (options.cpu_repack) {
    auto r = repack(m->weights_, *m->file_, options.threads, m->repacked_bytes_);
    if (!r) return r.error();
    if (*r != nullptr) m->repacked_.push_back(std::move(*r));
  }
  return std::shared_ptr<const decoder_model>(std::move(m));
}

size_t decoder_model::weight_bytes() const noexcept {
  size_t total = bytes(weights_.output);
  for (const auto& l : weights_.layers) {
    total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.w_gate) + bytes(l.w_up) + bytes(l.w_down);
    const moe_layer_weights& m = l.moe;
    total += bytes(m.router) + bytes(m.gate.stacked) + bytes(m.up.stacked) + bytes(m.down.stacked) +
             bytes(m.shared_gate_inp) + bytes(m.shared_gate) + bytes(m.shared_up) + bytes(m.shared_down);
  }
  return total;
}

size_t decoder_model::active_weight_bytes() const noexcept {
  if (!config_.is_moe()) return weight_bytes();
  const moe_config& mc = config_.moe;
  size_t total = bytes(weights_.output);
  for (const auto& l : weights_.layers) {
    total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo);
    const moe_layer_weights& m = l.moe;
    const size_t experts = bytes(m.gate.stacked) + bytes(m.up.stacked) + bytes(m.down.stacked);
    total += bytes(m.router) + experts / mc.n_expert * mc.n_expert_used + bytes(m.shared_gate_inp) +
             bytes(m.shared_gate) + bytes(m.shared_up) + bytes(m.shared_down);
  }
  return total;
}

size_t decoder_model::repacked_bytes() const noexcept { return repacked_bytes_; }

} // namespace dynamo::model
