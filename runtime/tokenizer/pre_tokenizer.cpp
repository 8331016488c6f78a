#include "runtime/tokenizer/pre_tokenizer.hpp"

#include "runtime/tokenizer/pre_tokenizer_patterns.hpp"

#include <algorithm>
#include <span>

namespace dynamo::tok {

namespace {

using namespace detail;

struct named {
  std::string_view name;
  pre_tokenizer_info info;
};

constexpr pre_tokenizer_info plain(pre_tokenizer k, bool clean_spaces) { return {k, false, false, clean_spaces}; }
constexpr pre_tokenizer_info llama3_like(pre_tokenizer k, bool clean) { return {k, true, true, clean}; }

// llama.cpp's llama_vocab::impl::load, tokenizer_pre -> pre_type and flags.
constexpr named names[] = {
    {"default", plain(pre_tokenizer::default_bpe, true)},
    {"llama3", llama3_like(pre_tokenizer::llama3, true)},
    {"llama-v3", llama3_like(pre_tokenizer::llama3, true)},
    {"llama-bpe", llama3_like(pre_tokenizer::llama3, true)},
    {"falcon3", llama3_like(pre_tokenizer::llama3, true)},
    {"falcon-h1", llama3_like(pre_tokenizer::llama3, true)},
    {"pixtral", llama3_like(pre_tokenizer::llama3, true)},
    {"midm-2.0", llama3_like(pre_tokenizer::llama3, true)},
    {"lfm2", llama3_like(pre_tokenizer::llama3, true)},
    {"dbrx", plain(pre_tokenizer::llama3, true)},
    {"smaug-bpe", plain(pre_tokenizer::llama3, true)},
    {"deepseek-llm", plain(pre_tokenizer::deepseek_llm, false)},
    {"deepseek-coder", plain(pre_tokenizer::deepseek_coder, false)},
    {"deepseek-v3", plain(pre_tokenizer::deepseek3, false)},
    {"hunyuan-dense", plain(pre_tokenizer::deepseek3, false)},
    {"joyai-llm", plain(pre_tokenizer::deepseek3, false)},
    {"hy_v4", plain(pre_tokenizer::deepseek3, false)},
    {"falcon", plain(pre_tokenizer::falcon, true)},
    {"mpt", plain(pre_tokenizer::gpt2, true)},
    {"starcoder", plain(pre_tokenizer::smollm, true)},
    {"gpt-2", plain(pre_tokenizer::gpt2, true)},
    {"gpt2", plain(pre_tokenizer::gpt2, true)},
    {"phi-2", plain(pre_tokenizer::gpt2, true)},
    {"jina-es", plain(pre_tokenizer::gpt2, true)},
    {"jina-de", plain(pre_tokenizer::gpt2, true)},
    {"gigachat", plain(pre_tokenizer::gpt2, true)},
    {"jina-v2-es", plain(pre_tokenizer::gpt2, true)},
    {"jina-v2-de", plain(pre_tokenizer::gpt2, true)},
    {"a.x-4.0", plain(pre_tokenizer::gpt2, true)},
    {"mellum", plain(pre_tokenizer::gpt2, true)},
    {"modern-bert", plain(pre_tokenizer::gpt2, true)},
    {"olmo", plain(pre_tokenizer::gpt2, true)},
    {"jais", plain(pre_tokenizer::gpt2, true)},
    {"exaone4", plain(pre_tokenizer::gpt2, true)},
    {"trillion", plain(pre_tokenizer::gpt2, false)},
    {"granite-docling", plain(pre_tokenizer::gpt2, false)},
    {"refact", plain(pre_tokenizer::smollm, true)},
    {"command-r", plain(pre_tokenizer::smollm, false)},
    {"smollm", plain(pre_tokenizer::smollm, false)},
    {"codeshell", plain(pre_tokenizer::smollm, true)},
    {"exaone", plain(pre_tokenizer::smollm, true)},
    {"minerva-7b", plain(pre_tokenizer::smollm, true)},
    {"mellum2", plain(pre_tokenizer::smollm, true)},
    {"qwen2", plain(pre_tokenizer::qwen2, false)},
    {"deepseek-r1-qwen", plain(pre_tokenizer::qwen2, false)},
    {"kormo", plain(pre_tokenizer::qwen2, false)},
    {"f2llmv2", plain(pre_tokenizer::qwen2, false)},
    {"megrez", plain(pre_tokenizer::qwen2, true)},
    {"stablelm2", plain(pre_tokenizer::qwen2, true)},
    {"hunyuan", plain(pre_tokenizer::qwen2, false)},
    {"solar-open", plain(pre_tokenizer::qwen2, false)},
    {"grok-2", plain(pre_tokenizer::qwen2, false)},
    {"qwen35", plain(pre_tokenizer::qwen35, false)},
    {"tekken", llama3_like(pre_tokenizer::tekken, false)},
    {"gpt-4o", plain(pre_tokenizer::gpt4o, false)},
    {"llama4", plain(pre_tokenizer::gpt4o, false)},
    {"kanana2", plain(pre_tokenizer::gpt4o, false)},
    {"talkie", plain(pre_tokenizer::gpt4o, false)},
    {"minimax-m2", plain(pre_tokenizer::gpt4o, false)},
    {"poro-chat", plain(pre_tokenizer::bloom, false)},
    {"bloom", plain(pre_tokenizer::bloom, true)},
    {"gpt3-finnish", plain(pre_tokenizer::bloom, true)},
    {"viking", plain(pre_tokenizer::viking, false)},
};

// One split of the sequence: a matcher over each piece, or the \s+$ rule.
struct step {
  matcher match = nullptr; ///< null: trailing whitespace (\s+$)
};

std::span<const step> steps_of(pre_tokenizer kind) {
  static constexpr step gpt2[] = {{match_gpt2}};
  static constexpr step smollm[] = {{match_number}, {match_gpt2}};
  static constexpr step llama3[] = {{match_llama3}};
  static constexpr step qwen2[] = {{match_qwen2}};
  static constexpr step qwen35[] = {{match_qwen35}};
  static constexpr step default_bpe[] = {{match_punct_default}, {match_gpt2}, {match_numbers}, {match_ascii_digits_3}};
  static constexpr step falcon[] = {{match_punct_falcon}, {match_gpt2}, {match_ascii_digits_3}};
  static constexpr step deepseek_llm[] = {{match_newline}, {match_deepseek_llm_letters}, {match_deepseek_llm_punct},
                                          {nullptr},       {match_cjk_hangul},           {match_numbers}};
  static constexpr step deepseek_coder[] = {
      {match_newline}, {match_space_letters}, {match_space_punct}, {match_cjk_hangul}, {match_number}};
  static constexpr step deepseek3[] = {{match_numbers_3}, {match_cjk_kana}, {match_deepseek3}};
  static constexpr step tekken[] = {{match_tekken}};
  static constexpr step gpt4o[] = {{match_gpt4o}};
  static constexpr step bloom[] = {{match_bloom}};
  static constexpr step viking[] = {{match_bloom}, {match_number}};
  auto all = [](const auto& a) { return std::span<const step>(a); };
  switch (kind) {
    case pre_tokenizer::gpt2: return all(gpt2);
    case pre_tokenizer::smollm: return all(smollm);
    case pre_tokenizer::llama3: return all(llama3);
    case pre_tokenizer::qwen2: return all(qwen2);
    case pre_tokenizer::qwen35: return all(qwen35);
    case pre_tokenizer::default_bpe: return all(default_bpe);
    case pre_tokenizer::falcon: return all(falcon);
    case pre_tokenizer::deepseek_llm: return all(deepseek_llm);
    case pre_tokenizer::deepseek_coder: return all(deepseek_coder);
    case pre_tokenizer::deepseek3: return all(deepseek3);
    case pre_tokenizer::tekken: return all(tekken);
    case pre_tokenizer::gpt4o: return all(gpt4o);
    case pre_tokenizer::bloom: return all(bloom);
    case pre_tokenizer::viking: return all(viking);
  }
  return all(gpt2);
}

// Splits [begin, end) with `s`, appending piece ends (in characters) to `out`.
// As a regex split that isolates matches, text between matches is a piece too.
void split_range(const text_chars& c, size_t begin, size_t end, step s, std::vector<size_t>& out) {
  if (!s.match) {
    const size_t n = trailing_whitespace(c, begin, end);
    if (n > 0 && end - n > begin)
      out.push_back(end - n);
    out.push_back(end);
    return;
  }
  size_t gap = begin;
  for (size_t i = begin; i < end;) {
    const size_t n = s.match(c, i, end);
    if (n == 0) {
      ++i;
      continue;
    }
    if (gap < i)
      out.push_back(i);
    i += n;
    out.push_back(i);
    gap = i;
  }
  if (gap < end)
    out.push_back(end);
}

} // namespace

std::optional<pre_tokenizer_info> pre_tokenizer_by_name(std::string_view name) noexcept {
  for (const auto& n : names)
    if (n.name == name)
      return n.info;
  return std::nullopt;
}

std::optional<pre_tokenizer> pre_tokenizer_from_name(std::string_view name) noexcept {
  if (auto i = pre_tokenizer_by_name(name))
    return i->kind;
  return std::nullopt;
}

std::string supported_pre_tokenizer_names() {
  std::string out;
  for (const auto& n : names)
    out.append(out.empty() ? "" : ", ").append(n.name);
  return out;
}

std::vector<std::string_view> pre_tokenize(pre_tokenizer kind, std::string_view text) {
  std::vector<std::string_view> out;
  if (text.empty())
    return out;
  const text_chars c(text);
  std::vector<size_t> ends{c.size()}, next;
  for (const step s : steps_of(kind)) {
    next.clear();
    size_t begin = 0;
    for (const size_t end : ends) {
      split_range(c, begin, end, s, next);
      begin = end;
    }
    std::swap(ends, next);
  }
  out.reserve(ends.size());
  size_t begin = 0;
  for (const size_t end : ends) {
    out.push_back(text.substr(c.at[begin], c.at[end] - c.at[begin]));
    begin = end;
  }
  return out;
}

} // namespace dynamo::tok
