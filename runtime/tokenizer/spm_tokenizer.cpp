#include "runtime/tokenizer/spm_tokenizer.hpp"

#include <algorithm>
#include <limits>

namespace dynamo::tok {

namespace {

constexpr uint32_t no_id = std::numeric_limits<uint32_t>::max();
constexpr std::string_view escaped_space = "\xE2\x96\x81"; // U+2581 LOWER ONE EIGHTH BLOCK

std::string escape_spaces(std::string_view text, bool prefix_space) {
  std::string out;
  out.reserve(text.size() + (text.size() >> 2) + 3);
  if (prefix_space)
    out += escaped_space;
  for (char c : text) {
    if (c == ' ')
      out += escaped_space;
    else
      out += c;
  }
  return out;
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, escaped_space.size()) == escaped_space) {
      out += ' ';
      i += escaped_space.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Bytes in the UTF-8 sequence its lead byte announces (llama.cpp's
// unicode_len_utf8: continuation and invalid bytes count as one).
uint32_t utf8_len(unsigned char lead) {
  static constexpr uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[lead >> 4];
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

// The byte a byte token "<0xXX>" stands for, or -1.
int byte_of(std::string_view t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>' || hex_digit(t[3]) < 0 || hex_digit(t[4]) < 0)
    return -1;
  return hex_digit(t[3]) * 16 + hex_digit(t[4]);
}

// Highest score first; equal scores: leftmost first (llama.cpp's llm_bigram_spm).
struct lower_priority {
  template <class B>
  bool operator()(const B& a, const B& b) const noexcept {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

} // namespace

expected<std::shared_ptr<spm_tokenizer>> spm_tokenizer::create(spm_vocab v) {
  auto special = special_vocab::build(v);
  if (!special)
    return std::move(special.error());
  const auto n = static_cast<uint32_t>(v.tokens.size());
  if (!v.scores.empty() && v.scores.size() != n)
    return make_error(errc::invalid_argument, "tokenizer: " + std::to_string(v.scores.size()) + " scores for " +
                                                  std::to_string(n) + " tokens");
  std::shared_ptr<spm_tokenizer> t(new spm_tokenizer());
  t->special_ = std::move(*special);
  t->bos_id_ = v.ids.bos;
  t->eos_id_ = v.ids.eos;
  t->add_bos_ = v.add_bos && v.ids.bos.has_value();
  t->add_eos_ = v.add_eos && v.ids.eos.has_value();
  t->add_space_prefix_ = v.add_space_prefix;
  t->scores_ = v.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(v.scores);
  t->tokens_ = std::move(v.tokens);
  t->ids_.reserve(n);
  t->bytes_.resize(n);
  for (uint32_t id = 0; id < n; ++id) {
    t->ids_.emplace(t->tokens_[id], id); // the first of duplicate texts wins
    const uint8_t a = t->special_.attr(id);
    const std::string& text = t->tokens_[id];
    if (a & (token_attr::control | token_attr::user_defined | token_attr::unknown))
      t->bytes_[id] = text;
    else if (a & token_attr::normal)
      t->bytes_[id] = unescape_spaces(text);
    else if (const int b = (a & token_attr::byte) ? byte_of(text) : -1; b >= 0)
      t->bytes_[id] = std::string(1, static_cast<char>(b));
  }
  static constexpr char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    auto id = t->token_id(std::string_view(name, sizeof name));
    if (!id)
      id = t->token_id(std::string(1, static_cast<char>(b)));
    if (!id)
      id = v.ids.unk;
    t->byte_ids_[b] = id ? *id : no_id;
  }
  return t;
}

std::optional<uint32_t> spm_tokenizer::token_id(std::string_view text) const {
  auto it = ids_.find(text);
  if (it == ids_.end())
    return std::nullopt;
  return it->second;
}

int64_t spm_tokenizer::bos_token_id() const noexcept { return add_bos_ ? static_cast<int64_t>(*bos_id_) : -1; }

int64_t spm_tokenizer::appended_eos_id() const noexcept { return add_eos_ ? static_cast<int64_t>(*eos_id_) : -1; }

std::string spm_tokenizer::token_bytes(uint32_t id, bool include_special) const {
  if (id >= tokens_.size())
    return {};
  if (!include_special && (special_.attr(id) & (token_attr::control | token_attr::unknown)))
    return {};
  return bytes_[id];
}

std::string spm_tokenizer::decode(std::span<const uint32_t> ids, bool include_special) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = token_bytes(ids[i], include_special);
    if (i == 0 && add_space_prefix_ && !piece.empty() && piece.front() == ' ')
      piece.erase(0, 1);
    out += piece;
  }
  return out;
}

std::vector<uint32_t> spm_tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 4);
  std::vector<special_vocab::fragment> fragments;
  special_.partition(text, parse_special, fragments);
  bool after_special = true; // the input's start counts as one
  for (const auto& f : fragments) {
    if (f.is_token) {
      out.push_back(f.id);
      after_special = true;
      continue;
    }
    encode_text(escape_spaces(f.text, add_space_prefix_ && after_special), out);
    after_special = false;
  }
  return out;
}

void spm_tokenizer::try_bigram(std::string_view text, const std::vector<symbol>& syms, int32_t left, int32_t right,
                               std::vector<bigram>& queue) const {
  if (left < 0 || right < 0)
    return;
  const symbol& l = syms[static_cast<size_t>(left)];
  const uint32_t size = l.n + syms[static_cast<size_t>(right)].n;
  auto id = token_id(text.substr(l.start, size));
  if (!id)
    return;
  queue.push_back({scores_[*id], left, right, size});
  std::push_heap(queue.begin(), queue.end(), lower_priority{});
}

// llama.cpp's llm_tokenizer_spm_session: characters as symbols, then the
// best-scoring adjacent pair whose text is a token merges, until none does.
void spm_tokenizer::encode_text(std::string_view text, std::vector<uint32_t>& out) const {
  std::vector<symbol> syms;
  syms.reserve(text.size());
  for (uint32_t off = 0; off < text.size();) {
    const uint32_t len = std::min<uint32_t>(utf8_len(static_cast<unsigned char>(text[off])),
                                            static_cast<uint32_t>(text.size()) - off);
    const auto index = static_cast<int32_t>(syms.size());
    syms.push_back({off, len, index - 1, off + len == text.size() ? -1 : index + 1});
    off += len;
  }
  std::vector<bigram> queue;
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i)
    try_bigram(text, syms, i - 1, i, queue);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), lower_priority{});
    const bigram b = queue.back();
    queue.pop_back();
    symbol& l = syms[static_cast<size_t>(b.left)];
    symbol& r = syms[static_cast<size_t>(b.right)];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size)
      continue; // stale: one side merged since
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0)
      syms[static_cast<size_t>(r.next)].prev = b.left;
    try_bigram(text, syms, l.prev, b.left, queue);
    try_bigram(text, syms, b.left, l.next, queue);
  }
  // Merged symbols are tokens by construction; a single character that is
  // not becomes its bytes. (llama.cpp's rev_merge re-split never applies: no
  // pair of smaller symbols spells one character.)
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
    const symbol& s = syms[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.start, s.n);
    if (auto id = token_id(piece)) {
      out.push_back(*id);
      continue;
    }
    for (unsigned char c : piece)
      if (byte_ids_[c] != no_id)
        out.push_back(byte_ids_[c]);
  }
}

} // namespace dynamo::tok
