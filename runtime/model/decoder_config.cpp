#include "runtime/model/decoder_config.hpp"

#include "runtime/gguf/gguf_file.hpp"

#include <array>

namespace dynamo::model {
namespace {

using kernels::ref::rope_style;

constexpr std::array<architecture_traits, 5> all_traits = {{
    // arch                  name        rope               bias   qk_norm moe    shexp  norm_topk
    {architecture::llama, "llama", rope_style::norm, false, false, false, false, true},
    {architecture::qwen2, "qwen2", rope_style::neox, true, false, false, false, false},
    {architecture::qwen2moe, "qwen2moe", rope_style::neox, true, false, true, true, false},
    {architecture::qwen3, "qwen3", rope_style::neox, false, true, false, false, false},
    {architecture::qwen3moe, "qwen3moe", rope_style::neox, false, true, true, false, true},
}};

/// Wraps the accessor's error so the message always names the key and says
/// that the model file is at fault.
template <class T>
expected<T> required(expected<T> v, const std::string& key) {
  if (v) return v;
  if (code_of(v.error()) == errc::not_found) {
    return make_error(errc::corrupt_file, "GGUF metadata key '" + key + "' is required but missing");
  }
  return make_error(errc::corrupt_file, "GGUF metadata key '" + key + "': " + message_of(v.error()));
}

/// Reads `<arch><suffix>` into the fields below, naming the key on errors.
struct key_reader {
  const gguf::file& f;
  std::string arch;

  [[nodiscard]] expected<void> u32(const char* suffix, uint32_t& out) const {
    auto v = required(f.get_u32(arch + suffix), arch + suffix);
    if (!v) return v.error();
    out = *v;
    return {};
  }
  [[nodiscard]] expected<void> u32(const char* suffix, uint32_t fallback, uint32_t& out) const {
    auto v = f.get_u32(arch + suffix, fallback);
    if (!v) return bad(suffix, v.error());
    out = *v;
    return {};
  }
  [[nodiscard]] expected<void> f32(const char* suffix, float fallback, float& out) const {
    auto v = f.get_f32(arch + suffix, fallback);
    if (!v) return bad(suffix, v.error());
    out = *v;
    return {};
  }
  [[nodiscard]] caf::error bad(const char* suffix, const caf::error& e) const {
    return make_error(errc::corrupt_file, "GGUF metadata key '" + arch + suffix + "': " + message_of(e));
  }
};

expected<void> read_shapes(const key_reader& k, decoder_config& c) {
  for (auto [key, out] : {std::pair{".block_count", &c.n_layer}, {".embedding_length", &c.n_embd},
                          {".attention.head_count", &c.n_head}, {".context_length", &c.context_length}}) {
    if (auto r = k.u32(key, *out); !r) return r;
  }
  if (auto r = k.u32(".feed_forward_length", 0, c.n_ff); !r) return r;
  if (auto r = k.u32(".attention.head_count_kv", c.n_head, c.n_kv_head); !r) return r;
  const uint32_t default_head_dim = c.n_head != 0 ? c.n_embd / c.n_head : 0;
  if (auto r = k.u32(".attention.key_length", default_head_dim, c.head_dim); !r) return r;
  uint32_t value_dim = 0;
  if (auto r = k.u32(".attention.value_length", c.head_dim, value_dim); !r) return r;
  if (value_dim != c.head_dim) {
    return make_error(errc::unsupported, k.arch + ".attention.value_length " + std::to_string(value_dim) +
                                             " differs from key_length " + std::to_string(c.head_dim) +
                                             " (not supported)");
  }
  return k.u32(".rope.dimension_count", c.head_dim, c.rot_dim);
}

expected<void> read_rope(const key_reader& k, decoder_config& c) {
  if (auto r = k.f32(".rope.freq_base", 10000.0f, c.rope_base); !r) return r;
  auto scaling = k.f.get_string(k.arch + ".rope.scaling.type", "none");
  if (!scaling) return k.bad(".rope.scaling.type", scaling.error());
  if (*scaling == "linear") {
    float factor = 1.0f;
    if (auto r = k.f32(".rope.scaling.factor", 1.0f, factor); !r) return r;
    if (!(factor > 0.0f)) {
      return make_error(errc::corrupt_file, k.arch + ".rope.scaling.factor must be positive");
    }
    c.rope_freq_scale = 1.0f / factor;
  } else if (*scaling != "none") {
    return make_error(errc::unsupported, "GGUF metadata key '" + k.arch + ".rope.scaling.type' = '" +
                                             std::string(*scaling) +
                                             "': RoPE scaling of this type is not supported (have none, "
                                             "linear, and Llama 3's rope_freqs.weight)");
  }
  return {};
}

expected<void> read_moe(const key_reader& k, decoder_config& c) {
  moe_config& m = c.moe;
  if (auto r = k.u32(".expert_count", 0, m.n_expert); !r) return r;
  const architecture_traits& t = traits_of(c.arch);
  if (m.n_expert == 0) {
    if (t.moe) return make_error(errc::corrupt_file, "GGUF metadata key '" + k.arch + ".expert_count' is required");
    return {};
  }
  if (c.arch != architecture::llama && !t.moe) {
    return make_error(errc::corrupt_file, k.arch + ".expert_count is set, but " + k.arch + " is a dense architecture");
  }
  if (auto r = k.u32(".expert_used_count", m.n_expert_used); !r) return r;
  if (auto r = k.u32(".expert_feed_forward_length", c.n_ff, m.n_ff_expert); !r) return r;
  if (t.shared_expert) {
    if (auto r = k.u32(".expert_shared_feed_forward_length", c.n_ff, m.n_ff_shared); !r) return r;
  }
  if (auto r = k.f32(".expert_weights_scale", 0.0f, m.weights_scale); !r) return r;
  if (m.weights_scale == 0.0f) m.weights_scale = 1.0f;
  m.norm_topk = t.norm_topk;
  return {};
}

expected<void> read_vocab(const gguf::file& f, const std::string& a, decoder_config& c) {
  const auto* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) return make_error(errc::corrupt_file, "GGUF tensor 'token_embd.weight' is missing");
  if (embd->ne[1] > UINT32_MAX) return make_error(errc::corrupt_file, "token_embd.weight has too many rows");
  auto v = f.get_u32(a + ".vocab_size", static_cast<uint32_t>(embd->ne[1]));
  if (!v) return make_error(errc::corrupt_file, "GGUF metadata key '" + a + ".vocab_size': " + message_of(v.error()));
  c.n_vocab = *v;
  if (c.n_vocab != embd->ne[1]) {
    return make_error(errc::corrupt_file, a + ".vocab_size = " + std::to_string(c.n_vocab) +
                                              " but token_embd.weight has " + std::to_string(embd->ne[1]) + " rows");
  }
  return {};
}

} // namespace

const architecture_traits& traits_of(architecture a) noexcept {
  for (const auto& t : all_traits) {
    if (t.arch == a) return t;
  }
  return all_traits[0];
}

std::optional<architecture> architecture_from_name(std::string_view name) noexcept {
  for (const auto& t : all_traits) {
    if (t.name == name) return t.arch;
  }
  return std::nullopt;
}

std::string supported_architectures() {
  std::string s;
  for (const auto& t : all_traits) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

expected<void> validate(const decoder_config& c) {
  auto bad = [](const std::string& what) { return make_error(errc::corrupt_file, "model config: " + what); };
  if (c.n_layer == 0 || c.n_embd == 0 || c.n_head == 0 || c.n_kv_head == 0 || c.head_dim == 0 || c.n_vocab == 0 ||
      c.context_length == 0) {
    return bad("block_count, embedding_length, head counts, head_dim, vocab_size and context_length must all be "
               "positive");
  }
  if (c.n_head % c.n_kv_head != 0) {
    return bad("head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
               std::to_string(c.n_kv_head));
  }
  if (c.rot_dim % 2 != 0 || c.rot_dim > c.head_dim) {
    return bad("rope.dimension_count " + std::to_string(c.rot_dim) + " must be even and <= head_dim " +
               std::to_string(c.head_dim));
  }
  if (!(c.rms_eps > 0.0f) || !(c.rope_base > 0.0f) || !(c.rope_freq_scale > 0.0f)) {
    return bad("layer_norm_rms_epsilon, rope.freq_base and the RoPE scale must be positive");
  }
  if (!c.is_moe()) {
    if (c.n_ff == 0) return bad("feed_forward_length must be positive");
    return {};
  }
  const moe_config& m = c.moe;
  if (m.n_expert_used == 0 || m.n_expert_used > m.n_expert) {
    return bad("expert_used_count " + std::to_string(m.n_expert_used) + " must be in [1, expert_count " +
               std::to_string(m.n_expert) + "]");
  }
  if (m.n_ff_expert == 0) return bad("expert_feed_forward_length must be positive");
  if (c.traits().shared_expert && m.n_ff_shared == 0) return bad("expert_shared_feed_forward_length must be positive");
  if (!(m.weights_scale > 0.0f)) return bad("expert_weights_scale must be positive");
  return {};
}

expected<decoder_config> read_decoder_config(const gguf::file& f) {
  decoder_config c;
  auto name = required(f.get_string("general.architecture"), "general.architecture");
  if (!name) return name.error();
  auto arch = architecture_from_name(*name);
  if (!arch) {
    return make_error(errc::unsupported, "architecture '" + std::string(*name) +
                                             "' is not supported (supported: " + supported_architectures() + ")");
  }
  c.arch = *arch;
  c.rope = traits_of(c.arch).rope;
  const key_reader k{f, std::string(*name)};
  if (auto r = read_shapes(k, c); !r) return r.error();
  auto eps = required(f.get_f32(k.arch + ".attention.layer_norm_rms_epsilon"),
                      k.arch + ".attention.layer_norm_rms_epsilon");
  if (!eps) return eps.error();
  c.rms_eps = *eps;
  if (auto r = read_rope(k, c); !r) return r.error();
  if (auto r = read_moe(k, c); !r) return r.error();
  if (auto r = read_vocab(f, k.arch, c); !r) return r.error();
  if (auto r = validate(c); !r) return r.error();
  return c;
}

} // namespace dynamo::model
