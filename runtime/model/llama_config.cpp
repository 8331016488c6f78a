#include "runtime/model/llama_config.hpp"

#include "runtime/gguf/gguf_file.hpp"

namespace dynamo::model {
namespace {

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

expected<void> read_shapes(const gguf::file& f, const std::string& a, llama_config& c) {
  auto get = [&](const std::string& key, uint32_t& out) -> expected<void> {
    auto v = required(f.get_u32(a + key), a + key);
    if (!v) return v.error();
    out = *v;
    return {};
  };
  for (auto [key, out] : {std::pair{".block_count", &c.n_layer}, {".embedding_length", &c.n_embd},
                          {".feed_forward_length", &c.n_ff}, {".attention.head_count", &c.n_head},
                          {".context_length", &c.context_length}}) {
    if (auto r = get(key, *out); !r) return r;
  }
  auto optional_u32 = [&](const std::string& key, uint32_t fallback, uint32_t& out) -> expected<void> {
    auto v = f.get_u32(a + key, fallback);
    if (!v) return make_error(errc::corrupt_file, "GGUF metadata key '" + a + key + "': " + message_of(v.error()));
    out = *v;
    return {};
  };
  if (auto r = optional_u32(".attention.head_count_kv", c.n_head, c.n_kv_head); !r) return r;
  const uint32_t default_head_dim = c.n_head != 0 ? c.n_embd / c.n_head : 0;
  if (auto r = optional_u32(".attention.key_length", default_head_dim, c.head_dim); !r) return r;
  if (auto r = optional_u32(".rope.dimension_count", c.head_dim, c.rot_dim); !r) return r;
  return {};
}

expected<void> read_vocab(const gguf::file& f, const std::string& a, llama_config& c) {
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

expected<void> validate(const llama_config& c) {
  auto bad = [](const std::string& what) { return make_error(errc::corrupt_file, "llama config: " + what); };
  if (c.n_layer == 0 || c.n_embd == 0 || c.n_ff == 0 || c.n_head == 0 || c.n_kv_head == 0 ||
      c.head_dim == 0 || c.n_vocab == 0 || c.context_length == 0) {
    return bad("block_count, embedding_length, feed_forward_length, head counts, head_dim, "
               "vocab_size and context_length must all be positive");
  }
  if (c.n_head % c.n_kv_head != 0) {
    return bad("head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
               std::to_string(c.n_kv_head));
  }
  if (c.rot_dim % 2 != 0 || c.rot_dim > c.head_dim) {
    return bad("rope.dimension_count " + std::to_string(c.rot_dim) + " must be even and <= head_dim " +
               std::to_string(c.head_dim));
  }
  if (!(c.rms_eps > 0.0f) || !(c.rope_base > 0.0f)) {
    return bad("layer_norm_rms_epsilon and rope.freq_base must be positive");
  }
  return {};
}

expected<llama_config> read_llama_config(const gguf::file& f) {
  llama_config c;
  auto arch = required(f.get_string("general.architecture"), "general.architecture");
  if (!arch) return arch.error();
  c.architecture = std::string(*arch);
  if (c.architecture != "llama") {
    return make_error(errc::unsupported, "architecture '" + c.architecture + "' is not supported (only llama)");
  }
  const std::string& a = c.architecture;
  if (auto r = read_shapes(f, a, c); !r) return r.error();
  auto eps = required(f.get_f32(a + ".attention.layer_norm_rms_epsilon"), a + ".attention.layer_norm_rms_epsilon");
  if (!eps) return eps.error();
  c.rms_eps = *eps;
  auto base = f.get_f32(a + ".rope.freq_base", 10000.0f);
  if (!base) return make_error(errc::corrupt_file, "GGUF metadata key '" + a + ".rope.freq_base': " + message_of(base.error()));
  c.rope_base = *base;
  auto scaling = f.get_string(a + ".rope.scaling.type", "none");
  if (!scaling || *scaling != "none") {
    return make_error(errc::unsupported, "GGUF metadata key '" + a + ".rope.scaling.type': RoPE scaling is not supported");
  }
  if (f.find_tensor("rope_freqs.weight") != nullptr) {
    return make_error(errc::unsupported, "GGUF tensor 'rope_freqs.weight' (Llama 3.1 RoPE scaling) is not supported");
  }
  if (auto r = read_vocab(f, a, c); !r) return r.error();
  if (auto r = validate(c); !r) return r.error();
  return c;
}

} // namespace dynamo::model
