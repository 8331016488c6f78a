#include "apps/dynamo-gguf-random/random_gguf.hpp"

#include "kernels/counter_rng.hpp"
#include "runtime/gguf/quantize.hpp"
#include "runtime/gguf/writer.hpp"
#include "runtime/tokenizer/bpe_tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>

namespace dynamo::apps {
namespace {

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

/// Element `i` of the tensor with salt `salt`: Irwin-Hall(4) from one 64-bit
/// hash, scaled to standard deviation `stddev` (bounded, so always finite).
float random_value(uint64_t salt, uint64_t i, float stddev) {
  const uint64_t z = kernels::rng_mix(salt ^ kernels::rng_mix(i));
  float s = 0.0f;
  for (int k = 0; k < 4; ++k) s += (static_cast<float>((z >> (16 * k)) & 0xffff) + 0.5f) / 65536.0f;
  return (s - 2.0f) * stddev * 1.7320508f; // var(sum of 4 U(0,1)) = 1/3
}

struct tensor_plan {
  std::string name;
  uint32_t k = 0, rows = 1; ///< ne0, ne1 (rows 1 and is_norm for 1-D)
  gguf::tensor_type type = gguf::tensor_type::f32;
  bool is_norm = false;
};

std::vector<tensor_plan> plan_tensors(const random_gguf_options& o) {
  const gguf::tensor_type embd = o.type == gguf::tensor_type::q4_1 ? gguf::tensor_type::q8_0 : o.type;
  const uint32_t hd = o.n_embd / o.n_head, q = o.n_head * hd, kv = o.n_kv_head * hd;
  std::vector<tensor_plan> t;
  t.push_back({"token_embd.weight", o.n_embd, o.n_vocab, embd, false});
  t.push_back({"output_norm.weight", o.n_embd, 1, gguf::tensor_type::f32, true});
  if (!o.tied_embeddings) t.push_back({"output.weight", o.n_embd, o.n_vocab, embd, false});
  for (uint32_t l = 0; l < o.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "attn_norm.weight", o.n_embd, 1, gguf::tensor_type::f32, true});
    t.push_back({p + "attn_q.weight", o.n_embd, q, o.type, false});
    t.push_back({p + "attn_k.weight", o.n_embd, kv, o.type, false});
    t.push_back({p + "attn_v.weight", o.n_embd, kv, o.type, false});
    t.push_back({p + "attn_output.weight", q, o.n_embd, o.type, false});
    t.push_back({p + "ffn_norm.weight", o.n_embd, 1, gguf::tensor_type::f32, true});
    t.push_back({p + "ffn_gate.weight", o.n_embd, o.n_ff, o.type, false});
    t.push_back({p + "ffn_up.weight", o.n_embd, o.n_ff, o.type, false});
    t.push_back({p + "ffn_down.weight", o.n_ff, o.n_embd, o.type, false});
  }
  return t;
}

/// Streams one tensor: rows are generated and encoded in parallel, a chunk
/// of about 16M values at a time, and handed to the sink in row order.
expected<void> stream_tensor(const random_gguf_options& o, const tensor_plan& t, uint64_t salt,
                             const gguf::writer::byte_sink& sink) {
  if (t.is_norm) {
    const std::vector<float> ones(t.k, 1.0f);
    return sink({reinterpret_cast<const std::byte*>(ones.data()), ones.size() * 4})
               ? expected<void>{}
               : make_error(errc::io_error, "writing " + t.name);
  }
  const uint64_t row_bytes = *gguf::row_bytes(t.type, t.k);
  const uint32_t rows_per_chunk = std::max<uint32_t>(1, static_cast<uint32_t>((uint64_t(1) << 24) / t.k));
  const unsigned n_threads = o.threads != 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::byte> chunk;
  for (uint32_t r0 = 0; r0 < t.rows; r0 += rows_per_chunk) {
    const uint32_t n = std::min(rows_per_chunk, t.rows - r0);
    chunk.resize(n * row_bytes);
    std::vector<std::string> errors(n_threads);
    auto work = [&](unsigned w) {
      std::vector<float> x(t.k);
      for (uint32_t r = w; r < n; r += n_threads) {
        const uint64_t base = uint64_t(r0 + r) * t.k;
        for (uint32_t i = 0; i < t.k; ++i) x[i] = random_value(salt, base + i, o.stddev);
        auto enc = gguf::quantize(t.type, x);
        if (!enc) {
          errors[w] = describe(enc.error());
          return;
        }
        std::copy(enc->begin(), enc->end(), chunk.begin() + static_cast<ptrdiff_t>(r * row_bytes));
      }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < n_threads; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& th : pool) th.join();
    for (const auto& e : errors) {
      if (!e.empty()) return make_error(errc::internal, t.name + ": " + e);
    }
    if (!sink(chunk)) return make_error(errc::io_error, "writing " + t.name);
  }
  return {};
}

} // namespace

expected<random_gguf_options> random_gguf_preset(std::string_view name) {
  random_gguf_options o;
  if (name == "llama-3.1-8b") {
    o.name = "random-llama-3.1-8b";
    o.n_layer = 32;
    o.n_embd = 4096;
    o.n_head = 32;
    o.n_kv_head = 8;
    o.n_ff = 14336;
    o.n_vocab = 128256;
    o.context_length = 8192;
    o.rope_base = 500000.0f;
    o.tied_embeddings = false;
  } else if (name == "smollm2-135m") {
    o.name = "random-smollm2-135m";
    o.n_layer = 30;
    o.n_embd = 576;
    o.n_head = 9;
    o.n_kv_head = 3;
    o.n_ff = 1536;
    o.n_vocab = 49152;
    o.context_length = 8192;
    o.rope_base = 100000.0f;
    o.tied_embeddings = true;
  } else if (name == "tiny") {
    o.name = "random-tiny";
  } else {
    return make_error(errc::invalid_argument,
                      "unknown preset '" + std::string(name) + "' (have llama-3.1-8b, smollm2-135m, tiny)");
  }
  return o;
}

expected<gguf::tensor_type> parse_weight_type(std::string_view name) {
  if (name == "f16") return gguf::tensor_type::f16;
  if (name == "bf16") return gguf::tensor_type::bf16;
  if (name == "q8_0") return gguf::tensor_type::q8_0;
  if (name == "q4_1") return gguf::tensor_type::q4_1;
  return make_error(errc::invalid_argument, "unknown --type '" + std::string(name) + "' (have f16, bf16, q8_0, q4_1)");
}

expected<void> validate(const random_gguf_options& o) {
  auto bad = [](const std::string& why) { return make_error(errc::invalid_argument, why); };
  if (o.n_layer == 0 || o.n_embd == 0 || o.n_head == 0 || o.n_kv_head == 0 || o.n_ff == 0 || o.context_length == 0) {
    return bad("every dimension must be positive");
  }
  if (o.n_embd % o.n_head != 0) return bad("--hidden must be a multiple of --heads");
  if (o.n_head % o.n_kv_head != 0) return bad("--heads must be a multiple of --kv-heads");
  if ((o.n_embd / o.n_head) % 2 != 0) return bad("the head dimension (hidden / heads) must be even for RoPE");
  if (o.n_embd % 32 != 0 || o.n_ff % 32 != 0) return bad("--hidden and --ffn must be multiples of 32");
  if (o.n_vocab < 259) return bad("--vocab must be at least 259 (3 control tokens and 256 byte tokens)");
  if (!(o.stddev > 0.0f) || !std::isfinite(o.stddev)) return bad("--std must be positive");
  if (o.type != gguf::tensor_type::f16 && o.type != gguf::tensor_type::bf16 && o.type != gguf::tensor_type::q8_0 &&
      o.type != gguf::tensor_type::q4_1) {
    return bad("weight type must be f16, bf16, q8_0 or q4_1");
  }
  return {};
}

uint64_t parameter_count(const random_gguf_options& o) noexcept {
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

expected<uint64_t> write_random_gguf(const random_gguf_options& o, const std::string& path) {
  if (auto ok = validate(o); !ok) return ok.error();
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", o.name);
  w.set_u32("llama.block_count", o.n_layer);
  w.set_u32("llama.context_length", o.context_length);
  w.set_u32("llama.embedding_length", o.n_embd);
  w.set_u32("llama.feed_forward_length", o.n_ff);
  w.set_u32("llama.attention.head_count", o.n_head);
  w.set_u32("llama.attention.head_count_kv", o.n_kv_head);
  w.set_f32("llama.rope.freq_base", o.rope_base);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", o.rms_eps);
  w.set_u32("llama.vocab_size", o.n_vocab);
  w.set_u32("llama.rope.dimension_count", o.n_embd / o.n_head);
  const byte_vocab v = make_byte_vocab(o.n_vocab);
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt2");
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  w.set_i32_array("tokenizer.ggml.token_type", v.types);
  w.set_string_array("tokenizer.ggml.merges", v.merges);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.padding_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_string("tokenizer.chat_template", chatml_template);

  const auto tensors = plan_tensors(o);
  for (const auto& t : tensors) {
    std::vector<uint64_t> dims = t.is_norm ? std::vector<uint64_t>{t.k} : std::vector<uint64_t>{t.k, t.rows};
    if (auto ok = w.declare_tensor(t.name, std::move(dims), t.type); !ok) return ok.error();
  }
  size_t next = 0;
  auto source = [&](std::string_view name, const gguf::writer::byte_sink& sink) -> expected<void> {
    while (next < tensors.size() && tensors[next].name != name) ++next;
    if (next == tensors.size()) return make_error(errc::internal, "unplanned tensor " + std::string(name));
    const uint64_t salt = kernels::rng_mix(o.seed) ^ kernels::rng_mix(0x7e5a + next);
    return stream_tensor(o, tensors[next], salt, sink);
  };
  if (auto ok = w.write_streaming(path, source); !ok) return ok.error();
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(errc::io_error, "stat " + path + ": " + ec.message());
  return static_cast<uint64_t>(size);
}

} // namespace dynamo::apps
