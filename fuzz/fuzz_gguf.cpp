// libFuzzer target: a GGUF image (header, metadata, tensor table, offsets and
// sizes against the file length), then the tokenizer and chat-template loaders
// that read a model's vocabulary and template out of it.
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "runtime/tokenizer/jinja_chat_template.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> bytes(size);
  if (size)
    std::memcpy(bytes.data(), data, size);
  auto f = dynamo::gguf::file::from_bytes(std::move(bytes));
  if (!f)
    return 0;
  const auto& file = **f;
  for (const auto& kv : file.metadata())
    (void)file.find(kv.key);
  for (const auto& t : file.tensors()) {
    // Every tensor the reader accepts lies inside the image.
    if (file.data_offset() + t.offset + t.n_bytes > file.size() || file.tensor_data(t).size() != t.n_bytes)
      __builtin_trap();
    if (t.n_rows() > 0 && t.ne[0] <= 4096) {
      std::vector<float> row(t.ne[0]);
      (void)file.dequantize_row(t, t.n_rows() - 1, row);
    }
  }
  if (auto tok = dynamo::tok::load_tokenizer(file)) {
    auto ids = (*tok)->encode("Hello world <|im_end|>", true);
    (void)(*tok)->decode(ids);
  }
  (void)dynamo::tok::load_chat_template(file);
  return 0;
}
