#include "runtime/grammar/token_vocab.hpp"

#include <algorithm>

namespace dynamo::gram {

expected<std::shared_ptr<const token_vocab>> token_vocab::build(std::vector<std::string> tokens,
                                                                 std::vector<uint32_t> eos) {
  if (tokens.empty()) return make_error(errc::invalid_argument, "token_vocab: no tokens");
  auto v = std::make_shared<token_vocab>();
  v->is_eos_.assign(tokens.size(), 0);
  for (uint32_t id : eos) {
    if (id >= tokens.size())
      return make_error(errc::invalid_argument, "token_vocab: EOS id " + std::to_string(id) + " out of range (" +
                                                    std::to_string(tokens.size()) + " tokens)");
    v->is_eos_[id] = 1;
  }
  std::sort(eos.begin(), eos.end());
  eos.erase(std::unique(eos.begin(), eos.end()), eos.end());
  v->eos_ = std::move(eos);
  v->tokens_ = std::move(tokens);
  for (uint32_t id = 0; id < v->tokens_.size(); ++id)
    if (!v->tokens_[id].empty() && !v->is_eos_[id]) v->sorted_.push_back(id);
  std::sort(v->sorted_.begin(), v->sorted_.end(), [&](uint32_t a, uint32_t b) {
    return v->tokens_[a] < v->tokens_[b] || (v->tokens_[a] == v->tokens_[b] && a < b);
  });
  v->offset_.assign(1, 0);
  for (uint32_t id : v->sorted_) {
    v->blob_ += v->tokens_[id];
    v->max_bytes_ = std::max(v->max_bytes_, static_cast<uint32_t>(v->tokens_[id].size()));
    v->offset_.push_back(static_cast<uint32_t>(v->blob_.size()));
  }
  v->lcp_.assign(v->sorted_.size(), 0);
  for (size_t i = 1; i < v->sorted_.size(); ++i) {
    const std::string& a = v->tokens_[v->sorted_[i - 1]];
    const std::string& b = v->tokens_[v->sorted_[i]];
    const size_t n = std::min(a.size(), b.size());
    size_t k = 0;
    while (k < n && a[k] == b[k]) ++k;
    v->lcp_[i] = static_cast<uint32_t>(k);
  }
  return std::shared_ptr<const token_vocab>(std::move(v));
}

expected<std::shared_ptr<const token_vocab>> token_vocab::from_tokenizer(const tok::tokenizer& t) {
  std::vector<std::string> tokens(t.vocab_size());
  for (uint32_t id = 0; id < tokens.size(); ++id) tokens[id] = t.token_bytes(id, false);
  return build(std::move(tokens), t.stop_token_ids());
}

} // namespace dynamo::gram
