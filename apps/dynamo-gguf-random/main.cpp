// dynamo-gguf-random: writes a random-weight GGUF of any served architecture
// and shape (benchmarks at 8B or 30B-A3B scale without real weights). Wiring
// only: the writer is runtime/model/random_model.
#include "runtime/core/cli.hpp"
#include "runtime/model/random_model.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

namespace {

using namespace dynamo;

/// A ggml type by its name, any case ("q4_k" or "Q4_K").
expected<gguf::tensor_type> parse_type(const std::string& name) {
  if (const auto t = kernels::ref::type_from_name(name)) return *t;
  return make_error(errc::invalid_argument, "unknown type '" + name + "'");
}

} // namespace

int main(int argc, char** argv) {
  std::string preset, arch, type, embd_type, out, name;
  uint32_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0, context = 0;
  uint32_t experts = 0, experts_used = 0, expert_ffn = 0, shared_ffn = 0, threads = 0;
  double rope_base = 0.0, stddev = -1.0;
  int64_t seed = 1;
  std::optional<bool> tied, rope_freqs;
  auto flag = [](std::optional<bool>& target) {
    return [&target](const std::string& v) -> expected<void> {
      target = v.empty() || v == "true" || v == "1";
      return {};
    };
  };
  cli c("dynamo-gguf-random", "write a random-weight GGUF of any served architecture (streamed; any size)");
  c.option("preset", &preset, model::random_model_presets() + " (flags below override it)")
      .option("arch", &arch, "llama | qwen2 | qwen2moe | qwen3 | qwen3moe (default: the preset's)")
      .option("layers", &layers, "transformer blocks (0: the preset's)")
      .option("hidden", &hidden, "embedding width (0: the preset's)")
      .option("heads", &heads, "query heads")
      .option("kv-heads", &kv_heads, "KV heads (divides --heads)")
      .option("head-dim", &head_dim, "head dimension (0: hidden / heads)")
      .option("ffn", &ffn, "dense MLP width (MoE: feed_forward_length)")
      .option("experts", &experts, "experts per MoE layer (0: dense; llama with experts is the Mixtral layout)")
      .option("experts-used", &experts_used, "experts per token")
      .option("expert-ffn", &expert_ffn, "expert MLP width (0: --ffn)")
      .option("shared-ffn", &shared_ffn, "qwen2moe shared-expert width (0: --ffn)")
      .option("vocab", &vocab, "vocabulary size, >= 259 (0: the preset's)")
      .option("context", &context, "<arch>.context_length")
      .option("rope-base", &rope_base, "RoPE frequency base")
      .custom("rope-freqs", true, flag(rope_freqs), "write Llama 3.1's rope_freqs.weight (--rope-freqs=false: none)")
      .option("type", &type,
              "matrix type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k iq4_nl iq4_xs, or llama.cpp's "
              "mixes q4_k_m q5_k_m (default bf16). Per-tensor types follow llama-quantize: the LM head in Q6_K or "
              "Q8_0, and fallbacks (Q4_K -> Q5_0, ...) for rows that do not fit a type's blocks")
      .option("embd-type", &embd_type, "token_embd/output type (default: as llama-quantize picks it)")
      .custom("tied", true, flag(tied), "share token_embd as the LM head (--tied=false for a separate output.weight)")
      .option("std", &stddev, "standard deviation of the weights (default 0.02; 0: scaled for unit variance)")
      .option("seed", &seed, "generator seed")
      .option("name", &name, "general.name")
      .option("threads", &threads, "generator threads (0: all)")
      .option("out", &out, "output path (required)")
      .epilog("Examples:\n  dynamo-gguf-random --preset llama-3.1-8b --type bf16 --out /tmp/llama8b-random.gguf\n"
              "  dynamo-gguf-random --preset qwen3-30b-a3b --type q8_0 --out /tmp/qwen3-moe.gguf\n"
              "  dynamo-gguf-random --arch qwen3 --layers 4 --hidden 256 --heads 8 --kv-heads 2 --head-dim 64 "
              "--ffn 512 --vocab 1024 --type q8_0 --out /tmp/small.gguf");
  if (auto code = cli_exit_code("dynamo-gguf-random", c.parse(argc, argv))) return *code;
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "dynamo-gguf-random: %s\n", why.c_str());
    return 2;
  };
  if (out.empty()) return fail("--out is required");
  auto o = model::random_model_preset(preset.empty() ? "tiny" : preset);
  if (!o) return fail(message_of(o.error()));
  if (!arch.empty()) {
    auto a = model::architecture_from_name(arch);
    if (!a) return fail("unknown --arch '" + arch + "' (have " + model::supported_architectures() + ")");
    o->arch = *a;
  }
  for (auto [v, field] : {std::pair{layers, &o->n_layer}, {hidden, &o->n_embd}, {heads, &o->n_head},
                          {kv_heads, &o->n_kv_head}, {head_dim, &o->head_dim}, {ffn, &o->n_ff},
                          {experts, &o->n_expert}, {experts_used, &o->n_expert_used}, {expert_ffn, &o->n_ff_expert},
                          {shared_ffn, &o->n_ff_shared}, {vocab, &o->n_vocab}, {context, &o->context_length}}) {
    if (v != 0) *field = v;
  }
  if (rope_base > 0.0) o->rope_base = static_cast<float>(rope_base);
  if (stddev >= 0.0) o->stddev = static_cast<float>(stddev);
  if (tied) o->tied_embeddings = *tied;
  if (rope_freqs) o->llama3_rope_freqs = *rope_freqs;
  if (!name.empty()) o->name = name;
  o->seed = static_cast<uint64_t>(seed);
  o->threads = threads;
  if (type == "q4_k_m" || type == "q5_k_m") {
    o->type = type == "q4_k_m" ? gguf::tensor_type::q4_k : gguf::tensor_type::q5_k;
    o->medium_mix = true;
  } else if (!type.empty()) {
    auto t = parse_type(type);
    if (!t) return fail(message_of(t.error()));
    o->type = *t;
  }
  if (!embd_type.empty()) {
    auto t = parse_type(embd_type);
    if (!t) return fail(message_of(t.error()));
    o->embd_type = *t;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto bytes = model::write_random_model(*o, out);
  if (!bytes) {
    std::fprintf(stderr, "dynamo-gguf-random: %s\n", describe(bytes.error()).c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"path\": \"%s\", \"architecture\": \"%s\", \"bytes\": %llu, \"parameters\": %llu, \"type\": \"%s\", "
              "\"seconds\": %.2f}\n",
              out.c_str(), std::string(model::traits_of(o->arch).name).c_str(),
              static_cast<unsigned long long>(*bytes), static_cast<unsigned long long>(model::parameter_count(*o)),
              (kernels::ref::type_name(o->type) + (o->medium_mix ? "_M" : "")).c_str(), secs);
  return 0;
}
