// Benchmark (not a test): GGUF open + tokenizer load time, and encode
// throughput of the SmolLM2 tokenizer on mixed text of growing size, printed
// as JSON. Every size encodes 1 MiB in total (4 KiB x 256 ... 1 MiB x 1), so
// the sizes see the same machine load; `scaling` = time per byte at the
// largest size / at the smallest (~1.0: encode is linear in prompt length).
// usage: tokenizer_bench [MODEL.gguf]   (default: $DYNAMO_MODEL_PATH, then the cache path)
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "runtime/tokenizer/jinja_chat_template.hpp"
#include "tests/runtime/gguf/test_model.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace dynamo;
using namespace dynamo::tok;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string mixed_text(size_t bytes) {
  static const std::string chunk =
      "The quick brown fox jumps over the lazy dog in 2024, doesn't it? "
      "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n"
      "Café naïve façade — 你好，世界！ こんにちは。 Привет, мир! 🦀🎉 "
      "<|im_start|>user\nWhat is 12345 * 678?<|im_end|>\n";
  std::string s;
  while (s.size() < bytes)
    s += chunk;
  s.resize(bytes);
  return s;
}

// Seconds per encode of `text`: best of 3 trials of `reps` encodes each.
double time_encode(const tokenizer& tk, const std::string& text, int reps, size_t& n_tokens) {
  double best = 1e30;
  for (int trial = 0; trial < 3; ++trial) {
    auto t0 = clock_type::now();
    for (int r = 0; r < reps; ++r)
      n_tokens = tk.encode(text, true).size();
    best = std::min(best, seconds_since(t0) / reps);
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--help") == 0) {
    std::puts("usage: tokenizer_bench [MODEL.gguf]  (prints JSON)");
    return 0;
  }
  const auto path = argc > 1 ? std::optional<std::string>(argv[1]) : dynamo::testing::smollm2_path();
  if (!path) {
    std::fprintf(stderr, "model not found: set DYNAMO_MODEL_PATH\n");
    return 1;
  }
  auto t0 = clock_type::now();
  auto f = gguf::file::open(*path);
  if (!f) {
    std::fprintf(stderr, "%s\n", describe(f.error()).c_str());
    return 1;
  }
  const double open_s = seconds_since(t0);
  t0 = clock_type::now();
  auto tk = load_tokenizer(**f);
  if (!tk) {
    std::fprintf(stderr, "%s\n", describe(tk.error()).c_str());
    return 1;
  }
  const double load_s = seconds_since(t0);
  std::printf("{\"gguf_open_ms\": %.2f, \"tokenizer_load_ms\": %.2f, \"encode\": [", open_s * 1e3, load_s * 1e3);
  double first_per_byte = 0, last_per_byte = 0;
  const size_t sizes[] = {4 << 10, 32 << 10, 256 << 10, 1 << 20};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    const std::string text = mixed_text(sizes[i]);
    size_t n_tokens = 0;
    const double s = time_encode(**tk, text, static_cast<int>((1 << 20) / sizes[i]), n_tokens);
    (i == 0 ? first_per_byte : last_per_byte) = s / static_cast<double>(sizes[i]);
    std::printf("%s{\"bytes\": %zu, \"tokens\": %zu, \"ms\": %.3f, \"mb_per_s\": %.2f, \"tokens_per_s\": %.0f}",
                i ? ", " : "", sizes[i], n_tokens, s * 1e3, static_cast<double>(sizes[i]) / s / 1e6,
                static_cast<double>(n_tokens) / s);
  }
  size_t n = 0;
  const double word_s = time_encode(**tk, std::string(100000, 'a'), 3, n);
  std::printf("], \"single_100k_letter_word_ms\": %.3f, \"scaling\": %.2f}\n", word_s * 1e3,
              last_per_byte / first_per_byte);
  return 0;
}
