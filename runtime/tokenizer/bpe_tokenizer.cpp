#include "runtime/tokenizer/bpe_tokenizer.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <limits>

namespace dynamo::tok {

namespace {

constexpr uint32_t no_id = std::numeric_limits<uint32_t>::max();

struct byte_maps {
  std::array<char32_t, 256> to_cp{};
  std::array<int16_t, 512> to_byte{}; // every mapped code point is < 0x144
};

// GPT-2 bytes_to_unicode: bytes that are printable Latin-1 keep their code
// point; the other 68 are numbered from U+0100 in byte order.
const byte_maps maps = [] {
  byte_maps m;
  m.to_byte.fill(-1);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    m.to_cp[b] = keep ? static_cast<char32_t>(b) : next++;
    m.to_byte[m.to_cp[b]] = static_cast<int16_t>(b);
  }
  return m;
}();

// The raw bytes a byte-level token text stands for. Characters outside the
// map (possible in odd vocabularies) are kept as their UTF-8.
std::string unmap_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = decode_utf8(text, i);
    const int b = codepoint_to_byte(c.cp);
    if (b >= 0)
      out += static_cast<char>(b);
    else
      out.append(text.substr(i, c.len));
    i += c.len;
  }
  return out;
}

bool is_eog_text(std::string_view t) {
  static constexpr std::string_view texts[] = {
      "<|endoftext|>", "<|im_end|>",  "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|end|>",
      "<end_of_turn>", "<EOT>",       "<|fim_pad|>", "<|repo_name|>", "<reponame>",
  };
  return std::find(std::begin(texts), std::end(texts), t) != std::end(texts);
}

} // namespace

char32_t byte_to_codepoint(uint8_t b) noexcept { return maps.to_cp[b]; }

int codepoint_to_byte(char32_t cp) noexcept { return cp < maps.to_byte.size() ? maps.to_byte[cp] : -1; }

expected<std::shared_ptr<bpe_tokenizer>> bpe_tokenizer::create(bpe_vocab v) {
  const size_t n = v.tokens.size();
  if (n == 0 || n >= no_id)
    return make_error(errc::invalid_argument, "tokenizer: vocabulary of " + std::to_string(n) + " tokens");
  if (!v.token_types.empty() && v.token_types.size() != n)
    return make_error(errc::invalid_argument, "tokenizer: " + std::to_string(v.token_types.size()) +
                                                  " token types for " + std::to_string(n) + " tokens");
  for (auto [name, id] : {std::pair{"bos", v.bos_id}, {"eos", v.eos_id}, {"eot", v.eot_id}, {"eom", v.eom_id},
                          {"unknown", v.unk_id}})
    if (id && *id >= n)
      return make_error(errc::invalid_argument, std::string("tokenizer: ") + name + " token id " +
                                                    std::to_string(*id) + " out of range (vocabulary " +
                                                    std::to_string(n) + ")");
  std::shared_ptr<bpe_tokenizer> t(new bpe_tokenizer());
  t->pre_ = v.pre;
  t->ignore_merges_ = v.pre == pre_tokenizer::llama3;
  t->bos_id_ = v.bos_id;
  t->eos_id_ = v.eos_id;
  t->add_bos_ = v.add_bos && v.bos_id.has_value();
  t->types_.resize(n, token_type::normal);
  for (size_t i = 0; i < v.token_types.size(); ++i)
    t->types_[i] = static_cast<token_type>(v.token_types[i]);
  t->tokens_ = std::move(v.tokens);
  t->ids_.reserve(n);
  t->bytes_.resize(n);
  for (uint32_t id = 0; id < n; ++id) {
    t->ids_.emplace(t->tokens_[id], id); // the first of duplicate texts wins
    const auto ty = t->types_[id];
    const bool plain = ty == token_type::control || ty == token_type::user_defined || ty == token_type::unknown ||
                       ty == token_type::unused;
    t->bytes_[id] = plain ? t->tokens_[id] : unmap_bytes(t->tokens_[id]);
  }
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_codepoint(static_cast<uint8_t>(b)));
    auto id = t->token_id(s);
    t->byte_ids_[b] = id ? *id : no_id;
  }
  if (auto ok = t->build_merges(v.merges); !ok)
    return std::move(ok.error());
  t->build_specials();
  t->build_eog(v);
  return t;
}

expected<void> bpe_tokenizer::build_merges(const std::vector<std::string>& merges) {
  merges_.reserve(merges.size());
  std::string joined;
  for (uint32_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    const size_t sp = m.find(' ', 1); // a token may itself be " " in non-byte-level vocabularies
    auto bad = [&](std::string_view why) {
      return make_error(errc::invalid_argument, "tokenizer: merge #" + std::to_string(rank) + " '" + m + "' " +
                                                    std::string(why));
    };
    if (sp == std::string::npos)
      return bad("has no space");
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    auto l = token_id(left), r = token_id(right);
    joined.assign(left).append(right);
    auto j = token_id(joined);
    if (!l || !r || !j)
      return bad("names a token missing from the vocabulary");
    // A pair listed twice keeps its first (highest-priority) rank.
    merges_.try_emplace((uint64_t{*l} << 32) | *r, merge_info{rank, *j});
  }
  return {};
}

void bpe_tokenizer::build_specials() {
  for (uint32_t id = 0; id < tokens_.size(); ++id) {
    const auto ty = types_[id];
    if ((ty == token_type::control || ty == token_type::user_defined) && !tokens_[id].empty())
      specials_.push_back({tokens_[id], id, ty == token_type::control});
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const special& a, const special& b) { return a.text.size() > b.text.size(); });
  for (const auto& s : specials_)
    special_first_[static_cast<unsigned char>(s.text[0])] = true;
}

void bpe_tokenizer::build_eog(const bpe_vocab& v) {
  for (auto id : {v.eos_id, v.eot_id, v.eom_id})
    if (id)
      eog_.push_back(*id);
  for (uint32_t id = 0; id < tokens_.size(); ++id)
    if ((types_[id] == token_type::control || types_[id] == token_type::user_defined) && is_eog_text(tokens_[id]))
      eog_.push_back(id);
  std::sort(eog_.begin(), eog_.end());
  eog_.erase(std::unique(eog_.begin(), eog_.end()), eog_.end());
}

int64_t bpe_tokenizer::bos_token_id() const noexcept { return add_bos_ ? static_cast<int64_t>(*bos_id_) : -1; }

std::optional<uint32_t> bpe_tokenizer::token_id(std::string_view text) const {
  auto it = ids_.find(text);
  if (it == ids_.end())
    return std::nullopt;
  return it->second;
}

token_type bpe_tokenizer::type_of(uint32_t id) const noexcept {
  return id < types_.size() ? types_[id] : token_type::undefined;
}

bool bpe_tokenizer::is_eog(uint32_t id) const noexcept { return std::binary_search(eog_.begin(), eog_.end(), id); }

std::string bpe_tokenizer::token_bytes(uint32_t id, bool include_special) const {
  if (id >= tokens_.size())
    return {};
  switch (types_[id]) {
    case token_type::control: return include_special ? bytes_[id] : std::string();
    case token_type::unknown:
    case token_type::unused: return {};
    default: return bytes_[id];
  }
}

std::vector<uint32_t> bpe_tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 4);
  merge_scratch scratch;
  size_t plain_from = 0;
  for (size_t i = 0; i < text.size();) {
    const special* hit = nullptr;
    if (special_first_[static_cast<unsigned char>(text[i])]) {
      for (const auto& s : specials_) {
        if ((parse_special || !s.control) && text.compare(i, s.text.size(), s.text) == 0) {
          hit = &s;
          break;
        }
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    encode_text(text.substr(plain_from, i - plain_from), scratch, out);
    out.push_back(hit->id);
    i += hit->text.size();
    plain_from = i;
  }
  encode_text(text.substr(plain_from), scratch, out);
  return out;
}

void bpe_tokenizer::encode_text(std::string_view text, merge_scratch& scratch, std::vector<uint32_t>& out) const {
  if (text.empty())
    return;
  for (auto piece : pre_tokenize(pre_, text))
    encode_piece(piece, scratch, out);
}

} // namespace dynamo::tok
