// libFuzzer target: encode arbitrary bytes (invalid UTF-8 included) with real
// BPE and SPM vocabularies, then decode the ids back. The vocabularies are
// llama.cpp's test files (scripts/setup.sh fetches them; $DYNAMO_LLAMA_VOCAB_DIR
// or ~/.cache/dynamo/llama.cpp-vocab). First input byte: tokenizer and mode.
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

std::vector<std::shared_ptr<dynamo::tok::tokenizer>> g_tokenizers;

std::string vocab_dir() {
  if (const char* d = std::getenv("DYNAMO_LLAMA_VOCAB_DIR"); d && *d)
    return d;
  const char* home = std::getenv("HOME");
  return std::string{home ? home : "."} + "/.cache/dynamo/llama.cpp-vocab";
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : {"gpt-2", "llama-spm", "qwen2", "phi-3", "bert-bge"}) {
    auto f = dynamo::gguf::file::open(vocab_dir() + "/ggml-vocab-" + name + ".gguf");
    if (!f)
      continue;
    if (auto t = dynamo::tok::load_tokenizer(**f))
      g_tokenizers.push_back(std::move(*t));
  }
  if (g_tokenizers.empty()) {
    std::fprintf(stderr, "fuzz_tokenizer: no vocabulary under %s (run scripts/setup.sh)\n", vocab_dir().c_str());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const auto& tok = *g_tokenizers[(data[0] >> 1) % g_tokenizers.size()];
  bool parse_special = data[0] & 1;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto ids = tok.encode(text, parse_special);
  for (uint32_t id : ids)
    if (id >= tok.vocab_size())
      __builtin_trap();
  (void)tok.decode(ids, parse_special);
  return 0;
}
