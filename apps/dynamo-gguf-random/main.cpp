// dynamo-gguf-random: writes a random-weight Llama GGUF of any shape (for
// benchmarks at 8B scale without real weights). Wiring only: random_gguf.cpp.
#include "apps/dynamo-gguf-random/random_gguf.hpp"
#include "runtime/core/cli.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

int main(int argc, char** argv) {
  using namespace dynamo;
  std::string preset, type, out, name;
  uint32_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, context = 0, threads = 0;
  double rope_base = 0.0, stddev = 0.0;
  int64_t seed = 1;
  std::optional<bool> tied;
  cli c("dynamo-gguf-random", "write a random-weight Llama GGUF (streamed; any size)");
  c.option("preset", &preset, "llama-3.1-8b | smollm2-135m | tiny (flags below override it)")
      .option("layers", &layers, "transformer blocks (0: the preset's)")
      .option("hidden", &hidden, "embedding width, multiple of 32 (0: the preset's)")
      .option("heads", &heads, "query heads")
      .option("kv-heads", &kv_heads, "KV heads (divides --heads)")
      .option("ffn", &ffn, "MLP width (multiple of 32)")
      .option("vocab", &vocab, "vocabulary size, >= 259 (0: the preset's)")
      .option("context", &context, "llama.context_length")
      .option("rope-base", &rope_base, "RoPE frequency base")
      .option("type", &type, "matrix type: f16 | bf16 | q8_0 | q4_1 (default bf16; q4_1 keeps embeddings q8_0)")
      .custom("tied", true,
              [&](const std::string& v) -> expected<void> {
                tied = v.empty() || v == "true" || v == "1";
                return {};
              },
              "share token_embd as the LM head (--tied=false for a separate output.weight)")
      .option("std", &stddev, "standard deviation of the weights (default 0.02)")
      .option("seed", &seed, "generator seed")
      .option("name", &name, "general.name")
      .option("threads", &threads, "generator threads (0: all)")
      .option("out", &out, "output path (required)")
      .epilog("Examples:\n  dynamo-gguf-random --preset llama-3.1-8b --type bf16 --out /tmp/llama8b-random.gguf\n"
              "  dynamo-gguf-random --layers 4 --hidden 256 --heads 8 --kv-heads 2 --ffn 512 --vocab 1024 "
              "--context 2048 --type q8_0 --out /tmp/small.gguf");
  if (auto code = cli_exit_code("dynamo-gguf-random", c.parse(argc, argv)))
    return *code;
  if (out.empty()) {
    std::fprintf(stderr, "dynamo-gguf-random: --out is required\n");
    return 2;
  }
  auto o = apps::random_gguf_preset(preset.empty() ? "tiny" : preset);
  if (!o) {
    std::fprintf(stderr, "dynamo-gguf-random: %s\n", message_of(o.error()).c_str());
    return 2;
  }
  auto set = [](uint32_t v, uint32_t& field) {
    if (v != 0) field = v;
  };
  set(layers, o->n_layer);
  set(hidden, o->n_embd);
  set(heads, o->n_head);
  set(kv_heads, o->n_kv_head);
  set(ffn, o->n_ff);
  set(vocab, o->n_vocab);
  set(context, o->context_length);
  if (rope_base > 0.0) o->rope_base = static_cast<float>(rope_base);
  if (stddev > 0.0) o->stddev = static_cast<float>(stddev);
  if (tied) o->tied_embeddings = *tied;
  if (!name.empty()) o->name = name;
  o->seed = static_cast<uint64_t>(seed);
  o->threads = threads;
  if (!type.empty()) {
    auto t = apps::parse_weight_type(type);
    if (!t) {
      std::fprintf(stderr, "dynamo-gguf-random: %s\n", message_of(t.error()).c_str());
      return 2;
    }
    o->type = *t;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto bytes = apps::write_random_gguf(*o, out);
  if (!bytes) {
    std::fprintf(stderr, "dynamo-gguf-random: %s\n", describe(bytes.error()).c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"path\": \"%s\", \"bytes\": %llu, \"parameters\": %llu, \"type\": \"%s\", \"seconds\": %.2f}\n",
              out.c_str(), static_cast<unsigned long long>(*bytes),
              static_cast<unsigned long long>(apps::parameter_count(*o)), gguf::type_name(o->type).c_str(), secs);
  return 0;
}
