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

// llama.cpp's detokenize clean-up (clean_up_tokenization_spaces), pass by pass.
std::string clean_up_spaces(const std::string& in) {
  if (in.empty())
    return in;
  std::string a(1, in[0]); // " ?", " !", " .", " ," lose the space
  for (size_t i = 1; i < in.size(); ++i) {
    const char x = in[i];
    if (in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
      a.pop_back();
    a += x;
  }
  std::string b(1, a[0]); // " ' " -> "'"; llama.cpp blanks the dropped space, so it
  bool prev_blanked = false; // no longer counts as the space before the next character
  for (size_t i = 1; i < a.size(); ++i) {
    const char x = a[i];
    const bool prev_space = !prev_blanked && a[i - 1] == ' ';
    prev_blanked = false;
    if (x == '\'' && prev_space && i + 1 < a.size() && a[i + 1] == ' ') {
      b.back() = x;
      ++i;
      prev_blanked = true;
      continue;
    }
    b += x;
  }
  std::string c(1, b[0]); // " 's", " 'm", " 're", " 've" lose the space; " 't", " 'd", " 'll" keep it
  for (size_t i = 1; i < b.size(); ++i) {
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const bool two = i + 2 < b.size();
      if (x1 == 's' || x1 == 'm' || (two && (x1 == 'r' || x1 == 'v') && b[i + 2] == 'e'))
        c.pop_back();
    }
    c += x;
  }
  return c;
}

// The byte of a SentencePiece-style byte token "<0xXX>" (Gemma-style BPE vocabularies).
int byte_token_value(std::string_view t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>')
    return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  const int h = hex(t[3]), l = hex(t[4]);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

} // namespace

char32_t byte_to_codepoint(uint8_t b) noexcept { return maps.to_cp[b]; }

int codepoint_to_byte(char32_t cp) noexcept { return cp < maps.to_byte.size() ? maps.to_byte[cp] : -1; }

expected<std::shared_ptr<bpe_tokenizer>> bpe_tokenizer::create(bpe_vocab v) {
  auto special = special_vocab::build(v);
  if (!special)
    return std::move(special.error());
  const auto n = static_cast<uint32_t>(v.tokens.size());
  std::shared_ptr<bpe_tokenizer> t(new bpe_tokenizer());
  t->special_ = std::move(*special);
  t->pre_ = v.pre;
  t->ignore_merges_ = v.ignore_merges;
  t->clean_spaces_ = v.clean_spaces;
  t->bos_id_ = v.ids.bos;
  t->eos_id_ = v.ids.eos;
  t->add_bos_ = v.add_bos && v.ids.bos.has_value();
  t->add_eos_ = v.add_eos && v.ids.eos.has_value();
  t->tokens_ = std::move(v.tokens);
  t->ids_.reserve(n);
  t->bytes_.resize(n);
  for (uint32_t id = 0; id < n; ++id) {
    t->ids_.emplace(t->tokens_[id], id); // the first of duplicate texts wins
    const uint8_t a = t->special_.attr(id);
    if (a & (token_attr::control | token_attr::user_defined | token_attr::unknown))
      t->bytes_[id] = t->tokens_[id];
    else if (a & token_attr::normal)
      t->bytes_[id] = unmap_bytes(t->tokens_[id]);
    else if (const int b = (a & token_attr::byte) ? byte_token_value(t->tokens_[id]) : -1; b >= 0)
      t->bytes_[id] = std::string(1, static_cast<char>(b));
  }
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_codepoint(static_cast<uint8_t>(b)));
    auto id = t->token_id(s);
    t->byte_ids_[b] = id ? *id : no_id;
  }
  if (auto ok = t->build_merges(v.merges); !ok)
    return std::move(ok.error());
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

int64_t bpe_tokenizer::bos_token_id() const noexcept { return add_bos_ ? static_cast<int64_t>(*bos_id_) : -1; }

std::optional<uint32_t> bpe_tokenizer::token_id(std::string_view text) const {
  auto it = ids_.find(text);
  if (it == ids_.end())
    return std::nullopt;
  return it->second;
}

bool bpe_tokenizer::is_eog(uint32_t id) const noexcept {
  const auto& eog = special_.eog();
  return std::binary_search(eog.begin(), eog.end(), id);
}

int64_t bpe_tokenizer::appended_eos_id() const noexcept { return add_eos_ ? static_cast<int64_t>(*eos_id_) : -1; }

// llama.cpp's token_to_piece: control and unknown tokens only when asked for.
std::string bpe_tokenizer::token_bytes(uint32_t id, bool include_special) const {
  if (id >= tokens_.size())
    return {};
  if (!include_special && (special_.attr(id) & (token_attr::control | token_attr::unknown)))
    return {};
  return bytes_[id];
}

std::string bpe_tokenizer::decode(std::span<const uint32_t> ids, bool include_special) const {
  std::string out = tokenizer::decode(ids, include_special);
  return clean_spaces_ ? clean_up_spaces(out) : out;
}

std::vector<uint32_t> bpe_tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 4);
  std::vector<special_vocab::fragment> fragments;
  special_.partition(text, parse_special, fragments);
  merge_scratch scratch;
  for (const auto& f : fragments) {
    if (f.is_token)
      out.push_back(f.id);
    else
      encode_text(f.text, scratch, out);
  }
  return out;
}

void bpe_tokenizer::encode_text(std::string_view text, merge_scratch& scratch, std::vector<uint32_t>& out) const {
  if (text.empty())
    return;
  for (auto piece : pre_tokenize(pre_, text))
    encode_piece(piece, scratch, out);
}

} // namespace dynamo::tok
