#include "runtime/tokenizer/gguf_tokenizer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

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

expected<std::string_view> tokenizer_model(const gguf::file& f) {
  auto model = f.get_string("tokenizer.ggml.model");
  if (!model)
    return std::move(model.error());
  if (*model != "gpt2" && *model != "llama")
    return make_error(errc::unsupported, "tokenizer model '" + std::string(*model) + "' is not supported (have " +
                                             std::string(supported_tokenizer_models) + ")");
  return *model;
}

// tokens, types, special ids, add_bos/add_eos (with the model's defaults) and
// the Phi-3 rule llama.cpp keys on general.name.
expected<void> read_common(const gguf::file& f, bool default_add_bos, vocab_common& v) {
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
  std::pair<const char*, std::optional<uint32_t>*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &v.ids.bos},         {"tokenizer.ggml.eos_token_id", &v.ids.eos},
      {"tokenizer.ggml.eot_token_id", &v.ids.eot},         {"tokenizer.ggml.eom_token_id", &v.ids.eom},
      {"tokenizer.ggml.unknown_token_id", &v.ids.unk},     {"tokenizer.ggml.fim_pre_token_id", &v.ids.fim_pre},
      {"tokenizer.ggml.fim_suf_token_id", &v.ids.fim_suf}, {"tokenizer.ggml.fim_mid_token_id", &v.ids.fim_mid},
      {"tokenizer.ggml.fim_pad_token_id", &v.ids.fim_pad}, {"tokenizer.ggml.fim_rep_token_id", &v.ids.fim_rep},
      {"tokenizer.ggml.fim_sep_token_id", &v.ids.fim_sep}, {"tokenizer.ggml.prefix_token_id", &v.ids.fim_pre},
      {"tokenizer.ggml.suffix_token_id", &v.ids.fim_suf},  {"tokenizer.ggml.middle_token_id", &v.ids.fim_mid}};
  for (auto [key, slot] : ids) {
    if (!f.has(key))
      continue;
    auto id = optional_id(f, key);
    if (!id)
      return std::move(id.error());
    *slot = *id;
  }
  auto add_bos = f.get_bool("tokenizer.ggml.add_bos_token", default_add_bos);
  if (!add_bos)
    return std::move(add_bos.error());
  v.add_bos = *add_bos;
  auto add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
  if (!add_eos)
    return std::move(add_eos.error());
  v.add_eos = *add_eos;
  auto general_name = f.get_string("general.name", "");
  std::string name = general_name ? std::string(*general_name) : std::string();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  v.rstrip_specials = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
  return {};
}

expected<pre_tokenizer_info> read_pre(const gguf::file& f) {
  if (!f.has("tokenizer.ggml.pre")) {
    spdlog::warn("{}: no tokenizer.ggml.pre; using llama.cpp's 'default' pre-tokenizer", f.path());
    return *pre_tokenizer_by_name("default");
  }
  auto name = f.get_string("tokenizer.ggml.pre");
  if (!name)
    return std::move(name.error());
  if (auto p = pre_tokenizer_by_name(*name))
    return *p;
  return make_error(errc::unsupported, "pre-tokenizer '" + std::string(*name) + "' (tokenizer.ggml.pre) is not " +
                                           "supported (have " + supported_pre_tokenizer_names() + ")");
}

} // namespace

expected<bpe_vocab> read_bpe_vocab(const gguf::file& f) {
  auto model = tokenizer_model(f);
  if (!model)
    return std::move(model.error());
  if (*model != "gpt2")
    return make_error(errc::unsupported, "tokenizer model '" + std::string(*model) + "' is not byte-level BPE");
  auto pre = read_pre(f);
  if (!pre)
    return std::move(pre.error());
  bpe_vocab v;
  v.pre = pre->kind;
  v.ignore_merges = pre->ignore_merges;
  v.clean_spaces = pre->clean_spaces;
  if (auto ok = read_common(f, pre->add_bos, v); !ok)
    return std::move(ok.error());
  auto merges = f.get_string_array("tokenizer.ggml.merges");
  if (!merges)
    return std::move(merges.error());
  v.merges.assign(merges->begin(), merges->end());
  return v;
}

expected<spm_vocab> read_spm_vocab(const gguf::file& f) {
  auto model = tokenizer_model(f);
  if (!model)
    return std::move(model.error());
  if (*model != "llama")
    return make_error(errc::unsupported, "tokenizer model '" + std::string(*model) + "' is not SentencePiece");
  spm_vocab v;
  if (auto ok = read_common(f, true, v); !ok)
    return std::move(ok.error());
  // llama.cpp's SentencePiece defaults for ids the file does not name.
  const auto n = v.tokens.size();
  for (auto [key, slot, dflt] : {std::tuple{"tokenizer.ggml.bos_token_id", &v.ids.bos, 1u},
                                 {"tokenizer.ggml.eos_token_id", &v.ids.eos, 2u},
                                 {"tokenizer.ggml.unknown_token_id", &v.ids.unk, 0u}})
    if (!f.has(key) && dflt < n)
      *slot = dflt;
  if (f.has("tokenizer.ggml.scores")) {
    auto scores = f.get_f32_array("tokenizer.ggml.scores");
    if (!scores)
      return std::move(scores.error());
    v.scores = std::move(*scores);
  }
  auto prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);
  if (!prefix)
    return std::move(prefix.error());
  v.add_space_prefix = *prefix;
  return v;
}

expected<std::shared_ptr<tokenizer>> load_tokenizer(const gguf::file& f) {
  auto model = tokenizer_model(f);
  if (!model)
    return std::move(model.error());
  auto wrap = [&](auto t) -> expected<std::shared_ptr<tokenizer>> {
    if (!t)
      return make_error(errc::corrupt_file, f.path() + ": " + message_of(t.error()));
    return std::shared_ptr<tokenizer>(std::move(*t));
  };
  if (*model == "llama") {
    auto v = read_spm_vocab(f);
    if (!v)
      return std::move(v.error());
    return wrap(spm_tokenizer::create(std::move(*v)));
  }
  auto v = read_bpe_vocab(f);
  if (!v)
    return std::move(v.error());
  return wrap(bpe_tokenizer::create(std::move(*v)));
}

} // namespace dynamo::tok
