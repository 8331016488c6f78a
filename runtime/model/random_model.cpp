#include "runtime/model/random_model.hpp"

#include "kernels/counter_rng.hpp"
#include "kernels/reference/quantize.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/writer.hpp"
#include "runtime/tokenizer/bpe_tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <thread>

namespace dynamo::model {
namespace {

using gguf::tensor_type;

constexpr const char* chatml_template =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

/// How a tensor's values are drawn.
enum class init : uint8_t { matrix, embedding, norm, bias, rope_freqs };

struct tensor_plan {
  std::string name;
  uint32_t k = 0;          ///< ne0
  uint32_t rows = 1;       ///< product of the outer dims
  std::vector<uint64_t> dims;
  tensor_type type = tensor_type::f32;
  init kind = init::matrix;
};

/// A roughly standard normal value for element `i` of the tensor salted
/// `salt`: Irwin-Hall(4) from one 64-bit hash (bounded, so always finite).
float normal_value(uint64_t salt, uint64_t i) {
  const uint64_t z = kernels::rng_mix(salt ^ kernels::rng_mix(i));
  float s = 0.0f;
  for (int k = 0; k < 4; ++k) s += (static_cast<float>((z >> (16 * k)) & 0xffff) + 0.5f) / 65536.0f;
  return (s - 2.0f) * 1.7320508f; // var(sum of 4 U(0,1)) = 1/3
}

/// Uniform in (-1, 1) for element `i`.
float uniform_value(uint64_t salt, uint64_t i) {
  const uint64_t z = kernels::rng_mix(salt ^ kernels::rng_mix(i ^ 0x5bd1e995ull));
  return (static_cast<float>(z >> 40) + 0.5f) / 8388608.0f - 1.0f;
}

/// Llama 3.1's rope_freqs: pair i's frequency divided by this factor.
float llama3_factor(uint32_t i, uint32_t rot_dim, float base) {
  constexpr double factor = 8.0, low = 1.0, high = 4.0, old_context = 8192.0;
  const double freq = std::pow(double(base), -2.0 * i / rot_dim);
  const double wavelen = 2.0 * std::numbers::pi / freq;
  if (wavelen < old_context / high) return 1.0f;
  if (wavelen > old_context / low) return static_cast<float>(factor);
  const double smooth = (old_context / wavelen - low) / (high - low);
  return static_cast<float>(1.0 / ((1.0 - smooth) / factor + smooth));
}

float value_of(const random_model_options& o, const tensor_plan& t, uint64_t salt, uint64_t i) {
  const bool scaled = o.stddev == 0.0f;
  switch (t.kind) {
    case init::matrix: return normal_value(salt, i) * (scaled ? 1.0f / std::sqrt(float(t.k)) : o.stddev);
    case init::embedding: return normal_value(salt, i) * (scaled ? 0.25f : o.stddev);
    case init::norm: return scaled ? 1.0f + 0.2f * uniform_value(salt, i) : 1.0f;
    case init::bias: return normal_value(salt, i) * (scaled ? 0.1f : o.stddev);
    case init::rope_freqs:
      return llama3_factor(static_cast<uint32_t>(i), o.head_dim != 0 ? o.head_dim : o.n_embd / o.n_head, o.rope_base);
  }
  return 0.0f;
}

uint32_t head_dim_of(const random_model_options& o) { return o.head_dim != 0 ? o.head_dim : o.n_embd / o.n_head; }
uint32_t ff_expert_of(const random_model_options& o) { return o.n_ff_expert != 0 ? o.n_ff_expert : o.n_ff; }
uint32_t ff_shared_of(const random_model_options& o) { return o.n_ff_shared != 0 ? o.n_ff_shared : o.n_ff; }

bool fits(tensor_type t, uint32_t ne0) { return kernels::ref::row_bytes(t, ne0).has_value(); }

/// llama-quantize's tensor_type_fallback: a type whose blocks a row cannot hold.
tensor_type fallback(tensor_type t, uint32_t ne0) {
  if (fits(t, ne0)) return t;
  switch (t) {
    case tensor_type::q4_k: t = tensor_type::q5_0; break;
    case tensor_type::q5_k: t = tensor_type::q5_1; break;
    case tensor_type::q6_k: t = tensor_type::q8_0; break;
    case tensor_type::iq4_xs: t = tensor_type::iq4_nl; break;
    default: break;
  }
  return fits(t, ne0) ? t : tensor_type::f16;
}

/// The layer of "blk.<i>.<...>", or -1.
int layer_of(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  int i = 0;
  size_t p = 4;
  for (; p < name.size() && name[p] >= '0' && name[p] <= '9'; ++p) i = i * 10 + (name[p] - '0');
  return p > 4 ? i : -1;
}

bool has(std::string_view name, std::string_view part) { return name.find(part) != std::string_view::npos; }

std::vector<tensor_plan> plan_layer(const random_model_options& o, uint32_t l) {
  const architecture_traits& tr = traits_of(o.arch);
  const uint32_t E = o.n_embd, D = head_dim_of(o), q = o.n_head * D, kv = o.n_kv_head * D;
  const std::string p = "blk." + std::to_string(l) + ".";
  const tensor_type f32 = tensor_type::f32;
  std::vector<tensor_plan> t;
  auto vec = [&](const std::string& name, uint32_t n, init kind) { t.push_back({p + name, n, 1, {n}, f32, kind}); };
  auto mat = [&](const std::string& name, uint32_t k, uint32_t rows, std::optional<tensor_type> type = {}) {
    t.push_back({p + name, k, rows, {k, rows}, type.value_or(matrix_type(o, p + name, k)), init::matrix});
  };
  auto stack = [&](const std::string& name, uint32_t k, uint32_t rows) {
    t.push_back({p + name, k, rows * o.n_expert, {k, rows, o.n_expert}, matrix_type(o, p + name, k), init::matrix});
  };
  vec("attn_norm.weight", E, init::norm);
  mat("attn_q.weight", E, q);
  mat("attn_k.weight", E, kv);
  mat("attn_v.weight", E, kv);
  mat("attn_output.weight", q, E);
  if (tr.qkv_bias) {
    vec("attn_q.bias", q, init::bias);
    vec("attn_k.bias", kv, init::bias);
    vec("attn_v.bias", kv, init::bias);
  }
  if (o.attn_output_bias) vec("attn_output.bias", E, init::bias);
  if (tr.qk_norm) {
    vec("attn_q_norm.weight", D, init::norm);
    vec("attn_k_norm.weight", D, init::norm);
  }
  vec("ffn_norm.weight", E, init::norm);
  if (o.n_expert == 0) {
    mat("ffn_gate.weight", E, o.n_ff);
    mat("ffn_up.weight", E, o.n_ff);
    mat("ffn_down.weight", o.n_ff, E);
    return t;
  }
  const uint32_t fe = ff_expert_of(o);
  mat("ffn_gate_inp.weight", E, o.n_expert, f32); // llama.cpp never quantizes the router
  stack("ffn_gate_exps.weight", E, fe);
  stack("ffn_up_exps.weight", E, fe);
  stack("ffn_down_exps.weight", fe, E);
  if (tr.shared_expert) {
    const uint32_t fs = ff_shared_of(o);
    vec("ffn_gate_inp_shexp.weight", E, init::matrix);
    mat("ffn_gate_shexp.weight", E, fs);
    mat("ffn_up_shexp.weight", E, fs);
    mat("ffn_down_shexp.weight", fs, E);
  }
  return t;
}

std::vector<tensor_plan> plan_tensors(const random_model_options& o) {
  std::vector<tensor_plan> t;
  t.push_back({"token_embd.weight", o.n_embd, o.n_vocab, {o.n_embd, o.n_vocab},
               matrix_type(o, "token_embd.weight", o.n_embd), init::embedding});
  t.push_back({"output_norm.weight", o.n_embd, 1, {o.n_embd}, tensor_type::f32, init::norm});
  if (!o.tied_embeddings) {
    t.push_back({"output.weight", o.n_embd, o.n_vocab, {o.n_embd, o.n_vocab}, matrix_type(o, "output.weight", o.n_embd),
                 init::matrix});
  }
  if (o.llama3_rope_freqs) {
    const uint32_t half = head_dim_of(o) / 2;
    t.push_back({"rope_freqs.weight", half, 1, {half}, tensor_type::f32, init::rope_freqs});
  }
  for (uint32_t l = 0; l < o.n_layer; ++l) {
    auto layer = plan_layer(o, l);
    std::move(layer.begin(), layer.end(), std::back_inserter(t));
  }
  return t;
}

/// Generates one tensor: rows are drawn and encoded in parallel, about 16M
/// values at a time, and handed to `sink` in row order.
template <class Sink>
expected<void> generate(const random_model_options& o, const tensor_plan& t, uint64_t salt, Sink&& sink) {
  const uint64_t row_bytes = *kernels::ref::row_bytes(t.type, t.k);
  const uint32_t rows_per_chunk = std::max<uint32_t>(1, static_cast<uint32_t>((uint64_t(1) << 24) / t.k));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n_threads = std::min<unsigned>(o.threads != 0 ? o.threads : hw, (t.rows + 15) / 16 + 1);
  std::vector<std::byte> chunk;
  for (uint32_t r0 = 0; r0 < t.rows; r0 += rows_per_chunk) {
    const uint32_t n = std::min(rows_per_chunk, t.rows - r0);
    chunk.resize(n * row_bytes);
    std::vector<std::string> errors(n_threads);
    auto work = [&](unsigned w) {
      std::vector<float> x(t.k);
      for (uint32_t r = w; r < n; r += n_threads) {
        const uint64_t base = uint64_t(r0 + r) * t.k;
        for (uint32_t i = 0; i < t.k; ++i) x[i] = value_of(o, t, salt, base + i);
        if (!kernels::ref::quantize_row(t.type, x.data(), chunk.data() + r * row_bytes, t.k)) {
          errors[w] = "cannot encode " + kernels::ref::type_name(t.type) + " rows of " + std::to_string(t.k);
          return;
        }
      }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < n_threads; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& th : pool) th.join();
    for (const auto& e : errors) {
      if (!e.empty()) return make_error(errc::internal, t.name + ": " + e);
    }
    if (!sink(std::span<const std::byte>(chunk))) return make_error(errc::io_error, "writing " + t.name);
  }
  return {};
}

uint64_t salt_of(const random_model_options& o, size_t index) {
  return kernels::rng_mix(o.seed) ^ kernels::rng_mix(0x7e5a + index);
}

void write_metadata(const random_model_options& o, gguf::writer& w) {
  const std::string a(traits_of(o.arch).name);
  w.set_string("general.architecture", a);
  w.set_string("general.name", o.name);
  if (const auto ft = llama_file_type(o)) w.set_u32("general.file_type", *ft);
  w.set_u32(a + ".block_count", o.n_layer);
  w.set_u32(a + ".context_length", o.context_length);
  w.set_u32(a + ".embedding_length", o.n_embd);
  w.set_u32(a + ".feed_forward_length", o.n_ff);
  w.set_u32(a + ".attention.head_count", o.n_head);
  w.set_u32(a + ".attention.head_count_kv", o.n_kv_head);
  if (o.head_dim != 0 && o.head_dim != o.n_embd / o.n_head) {
    w.set_u32(a + ".attention.key_length", o.head_dim);
    w.set_u32(a + ".attention.value_length", o.head_dim);
  }
  w.set_f32(a + ".rope.freq_base", o.rope_base);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", o.rms_eps);
  w.set_u32(a + ".vocab_size", o.n_vocab);
  w.set_u32(a + ".rope.dimension_count", head_dim_of(o));
  if (o.n_expert > 0) {
    w.set_u32(a + ".expert_count", o.n_expert);
    w.set_u32(a + ".expert_used_count", o.n_expert_used);
    if (o.arch != architecture::llama) w.set_u32(a + ".expert_feed_forward_length", ff_expert_of(o));
    if (traits_of(o.arch).shared_expert) w.set_u32(a + ".expert_shared_feed_forward_length", ff_shared_of(o));
  }
  const byte_vocab v = make_byte_vocab(o.n_vocab);
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2"); // llama.cpp's name; it refuses "gpt2"
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  w.set_i32_array("tokenizer.ggml.token_type", v.types);
  w.set_string_array("tokenizer.ggml.merges", v.merges);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.padding_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_string("tokenizer.chat_template", chatml_template);
}

} // namespace

expected<random_model_options> random_model_preset(std::string_view name) {
  random_model_options o;
  o.name = "random-" + std::string(name);
  auto shape = [&o](architecture arch, uint32_t layers, uint32_t embd, uint32_t heads, uint32_t kv_heads,
                    uint32_t ff, uint32_t vocab, uint32_t context, float rope_base, bool tied) {
    o.arch = arch;
    o.n_layer = layers;
    o.n_embd = embd;
    o.n_head = heads;
    o.n_kv_head = kv_heads;
    o.n_ff = ff;
    o.n_vocab = vocab;
    o.context_length = context;
    o.rope_base = rope_base;
    o.tied_embeddings = tied;
  };
  using enum architecture;
  if (name == "tiny") {
  } else if (name == "smollm2-135m") {
    shape(llama, 30, 576, 9, 3, 1536, 49152, 8192, 100000.0f, true);
  } else if (name == "llama-3.1-8b") {
    // context_length kept at 8192 (the real file says 131072) so KV and RoPE
    // tables stay benchmark-sized.
    shape(llama, 32, 4096, 32, 8, 14336, 128256, 8192, 500000.0f, false);
    o.llama3_rope_freqs = true;
  } else if (name == "mistral-7b") { // v0.3
    shape(llama, 32, 4096, 32, 8, 14336, 32768, 32768, 1000000.0f, false);
  } else if (name == "mixtral-8x7b") {
    shape(llama, 32, 4096, 32, 8, 14336, 32000, 32768, 1000000.0f, false);
    o.n_expert = 8;
    o.n_expert_used = 2;
  } else if (name == "qwen2.5-0.5b") {
    shape(qwen2, 24, 896, 14, 2, 4864, 151936, 32768, 1000000.0f, true);
    o.rms_eps = 1e-6f;
  } else if (name == "qwen3-0.6b") {
    shape(qwen3, 28, 1024, 16, 8, 3072, 151936, 40960, 1000000.0f, true);
    o.head_dim = 128;
    o.rms_eps = 1e-6f;
  } else if (name == "qwen3-8b") {
    shape(qwen3, 36, 4096, 32, 8, 12288, 151936, 40960, 1000000.0f, false);
    o.head_dim = 128;
    o.rms_eps = 1e-6f;
  } else if (name == "qwen3-30b-a3b") {
    shape(qwen3moe, 48, 2048, 32, 4, 6144, 151936, 40960, 1000000.0f, false);
    o.head_dim = 128;
    o.rms_eps = 1e-6f;
    o.n_expert = 128;
    o.n_expert_used = 8;
    o.n_ff_expert = 768;
  } else if (name == "qwen1.5-moe-a2.7b") {
    shape(qwen2moe, 24, 2048, 16, 16, 5632, 151936, 8192, 1000000.0f, false);
    o.rms_eps = 1e-6f;
    o.n_expert = 60;
    o.n_expert_used = 4;
    o.n_ff_expert = 1408;
    o.n_ff_shared = 5632;
  } else {
    return make_error(errc::invalid_argument,
                      "unknown preset '" + std::string(name) + "' (have " + random_model_presets() + ")");
  }
  return o;
}

tensor_type matrix_type(const random_model_options& o, std::string_view name, uint32_t ne0) {
  const bool embedding = name == "token_embd.weight" || name == "output.weight";
  if (embedding && o.embd_type) return *o.embd_type;
  tensor_type t = o.type;
  if (t == tensor_type::f32 || t == tensor_type::f16 || t == tensor_type::bf16) return t; // never quantized
  const int layer = layer_of(name);
  const auto n = static_cast<int>(o.n_layer);
  const bool more_bits = layer >= 0 && (layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2);
  const bool eight_experts = o.n_expert == 8;
  if (name == "output.weight" || (o.tied_embeddings && name == "token_embd.weight")) {
    t = !fits(t, ne0) || t == tensor_type::q8_0 ? tensor_type::q8_0 : tensor_type::q6_k;
  } else if (has(name, "attn_v.weight")) {
    if (o.medium_mix && more_bits) t = tensor_type::q6_k;
    if (eight_experts) t = tensor_type::q8_0;
  } else if (has(name, "attn_k.weight")) {
    if (eight_experts) t = tensor_type::q8_0;
  } else if (has(name, "attn_output.weight")) {
    if (eight_experts && o.medium_mix && o.type == tensor_type::q4_k) t = tensor_type::q5_k;
  } else if (has(name, "ffn_down")) {
    if (o.medium_mix && more_bits) t = tensor_type::q6_k;
  }
  return fallback(t, ne0);
}

std::optional<uint32_t> llama_file_type(const random_model_options& o) noexcept {
  if (o.medium_mix) {
    if (o.type == tensor_type::q4_k) return 15; // LLAMA_FTYPE_MOSTLY_Q4_K_M
    if (o.type == tensor_type::q5_k) return 17; // LLAMA_FTYPE_MOSTLY_Q5_K_M
    return std::nullopt;
  }
  switch (o.type) {
    case tensor_type::f32: return 0;
    case tensor_type::f16: return 1;
    case tensor_type::q4_0: return 2;
    case tensor_type::q4_1: return 3;
    case tensor_type::q8_0: return 7;
    case tensor_type::q5_0: return 8;
    case tensor_type::q5_1: return 9;
    case tensor_type::q6_k: return 18;
    case tensor_type::iq4_nl: return 25;
    case tensor_type::bf16: return 32;
    default: return std::nullopt;
  }
}

std::string random_model_presets() {
  return "tiny, smollm2-135m, llama-3.1-8b, mistral-7b, mixtral-8x7b, qwen2.5-0.5b, qwen3-0.6b, qwen3-8b, "
         "qwen3-30b-a3b, qwen1.5-moe-a2.7b";
}

expected<void> validate(const random_model_options& o) {
  auto bad = [](const std::string& why) { return make_error(errc::invalid_argument, why); };
  if (o.n_layer == 0 || o.n_embd == 0 || o.n_head == 0 || o.n_kv_head == 0 || o.n_ff == 0 || o.context_length == 0) {
    return bad("every dimension must be positive");
  }
  if (o.head_dim == 0 && o.n_embd % o.n_head != 0) return bad("--hidden must be a multiple of --heads");
  if (o.n_head % o.n_kv_head != 0) return bad("--heads must be a multiple of --kv-heads");
  if (head_dim_of(o) % 2 != 0) return bad("the head dimension must be even for RoPE");
  if (o.n_vocab < 259) return bad("--vocab must be at least 259 (3 control tokens and 256 byte tokens)");
  if (!(o.stddev >= 0.0f) || !std::isfinite(o.stddev)) return bad("--std must be positive (or 0 for scaled weights)");
  if (o.medium_mix && o.type != tensor_type::q4_k && o.type != tensor_type::q5_k) {
    return bad("the _M mixes need a q4_k or q5_k base type");
  }
  const architecture_traits& tr = traits_of(o.arch);
  if (tr.moe && o.n_expert == 0) return bad(std::string(tr.name) + " needs --experts");
  if (!tr.moe && o.arch != architecture::llama && o.n_expert != 0) {
    return bad(std::string(tr.name) + " is a dense architecture (no --experts)");
  }
  if (o.n_expert > 0 && (o.n_expert_used == 0 || o.n_expert_used > o.n_expert)) {
    return bad("--experts-used must be in [1, --experts]");
  }
  if (o.arch == architecture::llama && o.n_ff_expert != 0 && o.n_ff_expert != o.n_ff) {
    return bad("llama (Mixtral layout) experts have the FFN width --ffn; --expert-ffn must be 0 or equal");
  }
  for (const auto& t : plan_tensors(o)) {
    if (!kernels::ref::can_quantize(t.type)) {
      return bad("cannot write tensors of type " + kernels::ref::type_name(t.type));
    }
    if (!kernels::ref::row_bytes(t.type, t.k)) {
      return bad("tensor " + t.name + ": rows of " + std::to_string(t.k) + " are not a whole number of " +
                 kernels::ref::type_name(t.type) + " blocks");
    }
  }
  return {};
}

uint64_t parameter_count(const random_model_options& o) noexcept {
  uint64_t n = 0;
  for (const auto& t : plan_tensors(o)) n += uint64_t(t.k) * t.rows;
  return n;
}

byte_vocab make_byte_vocab(uint32_t n_vocab) {
  byte_vocab v;
  auto add = [&](std::string text, int32_t type) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
  };
  add("<|endoftext|>", 3);
  add("<|im_start|>", 3);
  add("<|im_end|>", 3);
  for (int b = 0; b < 256 && v.tokens.size() < n_vocab; ++b) add(utf8(tok::byte_to_codepoint(uint8_t(b))), 1);
  // Printable ASCII pairs (space first, so " a" style pieces merge early).
  for (int a = 0x20; a < 0x7f && v.tokens.size() < n_vocab; ++a) {
    for (int c = 0x20; c < 0x7f && v.tokens.size() < n_vocab; ++c) {
      const std::string l = utf8(tok::byte_to_codepoint(uint8_t(a))), r = utf8(tok::byte_to_codepoint(uint8_t(c)));
      v.merges.push_back(l + " " + r);
      add(l + r, 1);
    }
  }
  // The rest are visible user-defined words, not "unused" ones: a random model
  // samples them often, and a streaming client counts only tokens with text.
  for (uint32_t i = 0; v.tokens.size() < n_vocab; ++i) add("<w" + std::to_string(i) + ">", 4);
  return v;
}

expected<uint64_t> write_random_model(const random_model_options& o, const std::string& path) {
  if (auto ok = validate(o); !ok) return ok.error();
  gguf::writer w;
  write_metadata(o, w);
  const auto tensors = plan_tensors(o);
  for (const auto& t : tensors) {
    if (auto ok = w.declare_tensor(t.name, t.dims, t.type); !ok) return ok.error();
  }
  size_t next = 0;
  auto source = [&](std::string_view name, const gguf::writer::byte_sink& sink) -> expected<void> {
    while (next < tensors.size() && tensors[next].name != name) ++next;
    if (next == tensors.size()) return make_error(errc::internal, "unplanned tensor " + std::string(name));
    return generate(o, tensors[next], salt_of(o, next), sink);
  };
  if (auto ok = w.write_streaming(path, source); !ok) return ok.error();
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(errc::io_error, "stat " + path + ": " + ec.message());
  return static_cast<uint64_t>(size);
}

expected<std::shared_ptr<const gguf::file>> make_random_model(const random_model_options& o) {
  if (auto ok = validate(o); !ok) return ok.error();
  gguf::writer w;
  write_metadata(o, w);
  const auto tensors = plan_tensors(o);
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<std::byte> data;
    auto append = [&](std::span<const std::byte> b) {
      data.insert(data.end(), b.begin(), b.end());
      return true;
    };
    if (auto ok = generate(o, tensors[i], salt_of(o, i), append); !ok) return ok.error();
    if (auto ok = w.add_raw_tensor(tensors[i].name, tensors[i].dims, tensors[i].type, std::move(data)); !ok) {
      return ok.error();
    }
  }
  return gguf::file::from_bytes(w.bytes());
}

} // namespace dynamo::model
