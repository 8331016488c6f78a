#include "runtime/tokenizer/vocab.hpp"

#include <algorithm>

namespace dynamo::tok {

namespace {

bool one_of(std::string_view t, std::initializer_list<std::string_view> texts) {
  return std::find(texts.begin(), texts.end(), t) != texts.end();
}

// Texts llama.cpp treats as ending generation (llama_vocab::impl::load).
bool is_eog_text(std::string_view t) {
  return one_of(t, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                    "<｜end▁of▁sentence｜>", "[e~["});
}

// Fill-in-the-middle tokens, found by text when GGUF does not name them.
struct fim_kind {
  std::optional<uint32_t> special_token_ids::*slot;
  std::initializer_list<std::string_view> texts;
};

const fim_kind fim_kinds[] = {
    {&special_token_ids::fim_pre,
     {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>",
      "<|prefix|>"}},
    {&special_token_ids::fim_suf,
     {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>",
      "<|suffix|>"}},
    {&special_token_ids::fim_mid,
     {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>",
      "<|middle|>"}},
    {&special_token_ids::fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
    {&special_token_ids::fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
    {&special_token_ids::fim_sep, {"<|file_sep|>"}},
};

uint8_t attr_of(token_type t) {
  switch (t) {
    case token_type::normal: return token_attr::normal;
    case token_type::unknown: return token_attr::unknown;
    case token_type::control: return token_attr::control;
    case token_type::user_defined: return token_attr::user_defined;
    case token_type::unused: return token_attr::unused;
    case token_type::byte: return token_attr::byte;
    case token_type::undefined: return 0;
  }
  return 0;
}

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

} // namespace

expected<special_vocab> special_vocab::build(const vocab_common& v) {
  const size_t n = v.tokens.size();
  if (n == 0 || n >= UINT32_MAX)
    return make_error(errc::invalid_argument, "tokenizer: vocabulary of " + std::to_string(n) + " tokens");
  if (!v.token_types.empty() && v.token_types.size() != n)
    return make_error(errc::invalid_argument, "tokenizer: " + std::to_string(v.token_types.size()) +
                                                  " token types for " + std::to_string(n) + " tokens");
  const auto& ids = v.ids;
  for (auto [name, id] : {std::pair{"bos", ids.bos}, {"eos", ids.eos}, {"eot", ids.eot}, {"eom", ids.eom},
                          {"unknown", ids.unk}, {"fim_pre", ids.fim_pre}, {"fim_suf", ids.fim_suf},
                          {"fim_mid", ids.fim_mid}, {"fim_pad", ids.fim_pad}, {"fim_rep", ids.fim_rep},
                          {"fim_sep", ids.fim_sep}})
    if (id && *id >= n)
      return make_error(errc::invalid_argument, std::string("tokenizer: ") + name + " token id " +
                                                    std::to_string(*id) + " out of range (vocabulary " +
                                                    std::to_string(n) + ")");
  special_vocab s;
  s.types_.assign(n, token_type::normal);
  for (size_t i = 0; i < v.token_types.size(); ++i) {
    const int32_t t = v.token_types[i];
    s.types_[i] = t >= 0 && t <= 6 ? static_cast<token_type>(t) : token_type::undefined;
  }
  s.attrs_.resize(n);
  for (size_t i = 0; i < n; ++i)
    s.attrs_[i] = attr_of(s.types_[i]);
  special_token_ids found = ids;
  s.adjust_by_text(v, found);
  for (uint32_t id = 0; id < n; ++id)
    if ((s.attrs_[id] & (token_attr::control | token_attr::user_defined | token_attr::unknown)) &&
        !v.tokens[id].empty())
      s.specials_.push_back({v.tokens[id], id});
  std::stable_sort(s.specials_.begin(), s.specials_.end(),
                   [](const special& a, const special& b) { return a.text.size() > b.text.size(); });
  for (size_t k = 0; k < s.specials_.size(); ++k) {
    const std::string& t = s.specials_[k].text;
    s.first_byte_[static_cast<unsigned char>(t[0])] = true;
    if (s.lengths_.empty() || s.lengths_.back() != t.size())
      s.lengths_.push_back(t.size());
    s.by_text_.emplace(t, k); // equal texts: the first (lower id) is the one matched
  }
  if (v.rstrip_specials) {
    for (const auto& sp : s.specials_)
      s.attrs_[sp.id] |= token_attr::rstrip;
    for (uint32_t id = 0; id < n; ++id) {
      if (v.tokens[id] == "</s>")
        s.attrs_[id] |= token_attr::rstrip;
      if (one_of(v.tokens[id], {"<unk>", "<s>", "<|endoftext|>"}))
        s.attrs_[id] &= static_cast<uint8_t>(~token_attr::rstrip);
    }
  }
  return s;
}

// Control-looking tokens by text, FIM tokens and the EOG set, in the order
// llama.cpp applies them (texts mark tokens control even when typed otherwise).
void special_vocab::adjust_by_text(const vocab_common& v, special_token_ids& ids) {
  const uint32_t n = static_cast<uint32_t>(v.tokens.size());
  std::vector<uint32_t> eog;
  for (uint32_t id = 0; id < n; ++id) {
    // (End-of-turn texts llama.cpp marks control are all EOG texts, marked below.)
    for (const auto& k : fim_kinds) {
      if (!(ids.*k.slot) && one_of(v.tokens[id], k.texts)) {
        ids.*k.slot = id;
        attrs_[id] |= token_attr::control;
      }
    }
  }
  for (auto id : {ids.fim_pad, ids.fim_rep, ids.fim_sep})
    if (id)
      eog.push_back(*id);
  for (uint32_t id = 0; id < n; ++id) {
    if (is_eog_text(v.tokens[id])) {
      eog.push_back(id);
      attrs_[id] |= token_attr::control;
    }
  }
  for (uint32_t id = 0; id < n; ++id) // gpt-oss: always rendered
    if (one_of(v.tokens[id], {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}))
      attrs_[id] = token_attr::user_defined;
  for (auto id : {ids.eos, ids.eot, ids.eom})
    if (id)
      eog.push_back(*id);
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  auto has = [&](std::string_view t) {
    return std::any_of(eog.begin(), eog.end(), [&](uint32_t id) { return v.tokens[id] == t; });
  };
  auto drop = [&](std::string_view t, uint8_t attr) {
    for (auto it = eog.begin(); it != eog.end(); ++it) {
      if (v.tokens[*it] == t) {
        attrs_[*it] = attr;
        eog.erase(it);
        return;
      }
    }
  };
  // o200k_harmony / solar-open: <|end|> ends a message, not generation.
  if (has("<|end|>") && ((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"))))
    drop("<|end|>", token_attr::user_defined);
  // Gemma 4 / PLaMo: </s> is a normal token there.
  if (has("</s>") && (has("<|tool_response>") || has("<|plamo:eos|>")))
    drop("</s>", token_attr::normal);
  eog_ = std::move(eog);
}

token_type special_vocab::type_of(uint32_t id) const noexcept {
  return id < types_.size() ? types_[id] : token_type::undefined;
}

void special_vocab::partition(std::string_view text, bool parse_special, std::vector<fragment>& out) const {
  out.clear();
  if (text.empty())
    return;
  out.push_back({text, 0, false});
  std::vector<char> present(specials_.size(), 0);
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!first_byte_[static_cast<unsigned char>(text[i])])
      continue;
    for (const size_t len : lengths_) {
      if (len > text.size() - i)
        continue;
      if (auto it = by_text_.find(text.substr(i, len)); it != by_text_.end()) {
        present[it->second] = 1;
        any = true;
      }
    }
  }
  if (!any)
    return;
  std::vector<fragment> next;
  for (size_t k = 0; k < specials_.size(); ++k) {
    const special& sp = specials_[k];
    const uint8_t a = attrs_[sp.id];
    if (!present[k] || (!parse_special && (a & (token_attr::control | token_attr::unknown))))
      continue;
    next.clear();
    for (const fragment& f : out) {
      if (f.is_token) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (;;) {
        const size_t pos = rest.find(sp.text);
        if (pos == std::string_view::npos) {
          if (!rest.empty())
            next.push_back({rest, 0, false});
          break;
        }
        std::string_view left = rest.substr(0, pos);
        if (a & token_attr::lstrip)
          while (!left.empty() && is_ascii_space(left.back()))
            left.remove_suffix(1);
        if (!left.empty())
          next.push_back({left, 0, false});
        next.push_back({{}, sp.id, true});
        rest.remove_prefix(pos + sp.text.size());
        if (a & token_attr::rstrip)
          while (!rest.empty() && is_ascii_space(rest.front()))
            rest.remove_prefix(1);
      }
    }
    out.swap(next);
  }
}

} // namespace dynamo::tok
