#include "runtime/tokenizer/gguf_tokenizer.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::tok {

namespace {

// An optional token id key: absent, negative or 0xFFFFFFFF (as some
// converters write "none") mean no such token.
expected<std::optional<uint32_t>> optional_id(const gguf::file& f, std::string_view key) {
  const gguf::value* v = f.find(key);
  if (!v)
    return std::optional<uint32_t>{};
  auto i = v->to_int();
  if (!v->is_integer() || !i)
    return make_error(errc::corrupt_file, std::string(key) + " is " + v->summary() + ", expected a token id");
  if (*i < 0 || *i == 0xFFFFFFFF)
    return std::optional<uint32_t>{};
  if (*i > 0xFFFFFFFF)
    return make_error(errc::corrupt_file, std::string(key) + " = " + std::to_string(*i) + " is out of range");
  return std::optional<uint32_t>{static_cast<uint32_t>(*i)};
}

expected<pre_tokenizer> read_pre(const gguf::file& f) {
  auto name = f.get_string("tokenizer.ggml.pre", "default");
  if (!name)
    return std::move(name.error());
  if (*name == "default") {
    spdlog::warn("{}: no tokenizer.ggml.pre; using the GPT-2 pre-tokenizer", f.path());
    return pre_tokenizer::gpt2;
  }
  if (auto p = pre_tokenizer_from_name(*name))
    return *p;
  return make_error(errc::unsupported, "pre-tokenizer '" + std::string(*name) +
                                           "' not supported (have gpt2, smollm/starcoder, llama-bpe, qwen2)");
}

} // namespace

expected<bpe_vocab> read_bpe_vocab(const gguf::file& f) {
  auto model = f.get_string("tokenizer.ggml.model");
  if (!model)
    return std::move(model.error());
  if (*model == "llama")
    return make_error(errc::unsupported, "tokenizer model 'llama' (SentencePiece) is not supported; "
                                         "only 'gpt2' (byte-level BPE)");
  if (*model != "gpt2")
    return make_error(errc::unsupported, "tokenizer model '" + std::string(*model) +
                                             "' is not supported; only 'gpt2' (byte-level BPE)");
  bpe_vocab v;
  auto pre = read_pre(f);
  if (!pre)
    return std::move(pre.error());
  v.pre = *pre;
  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (!tokens)
    return std::move(tokens.error());
  v.tokens.assign(tokens->begin(), tokens->end());
  if (f.has("tokenizer.ggml.token_type")) {
    auto types = f.get_int_array("tokenizer.ggml.token_type");
    if (!types)
      return std::move(types.error());
    v.token_types.assign(types->begin(), types->end());
  }
  auto merges = f.get_string_array("tokenizer.ggml.merges");
  if (!merges)
    return std::move(merges.error());
  v.merges.assign(merges->begin(), merges->end());
  std::pair<const char*, std::optional<uint32_t>*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos_id}, {"tokenizer.ggml.eos_token_id", &v.eos_id},
      {"tokenizer.ggml.eot_token_id", &v.eot_id}, {"tokenizer.ggml.eom_token_id", &v.eom_id},
      {"tokenizer.ggml.unknown_token_id", &v.unk_id}};
  for (auto [key, slot] : ids) {
    auto id = optional_id(f, key);
    if (!id)
      return std::move(id.error());
    *slot = *id;
  }
  auto add_bos = f.get_bool("tokenizer.ggml.add_bos_token", false);
  if (!add_bos)
    return std::move(add_bos.error());
  v.add_bos = *add_bos;
  return v;
}

expected<std::shared_ptr<bpe_tokenizer>> load_tokenizer(const gguf::file& f) {
  auto v = read_bpe_vocab(f);
  if (!v)
    return std::move(v.error());
  auto t = bpe_tokenizer::create(std::move(*v));
  if (!t)
    return make_error(errc::corrupt_file, f.path() + ": " + message_of(t.error()));
  return t;
}

} // namespace dynamo::tok
