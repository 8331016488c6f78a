#include "runtime/tokenizer/tokenizer.hpp"

namespace dynamo::tok {

std::string tokenizer::decode(std::span<const uint32_t> ids, bool include_special) const {
  std::string out;
  for (auto id : ids)
    out += token_bytes(id, include_special);
  return out;
}

std::vector<uint32_t> tokenizer::encode_prompt(std::string_view text, bool parse_special) const {
  auto ids = encode(text, parse_special);
  const int64_t bos = bos_token_id();
  if (bos >= 0 && (ids.empty() || ids.front() != static_cast<uint32_t>(bos)))
    ids.insert(ids.begin(), static_cast<uint32_t>(bos));
  if (const int64_t eos = appended_eos_id(); eos >= 0)
    ids.push_back(static_cast<uint32_t>(eos));
  return ids;
}

std::vector<uint32_t> byte_tokenizer::encode(std::string_view text, bool) const {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  for (unsigned char c : text)
    out.push_back(c);
  return out;
}

std::string byte_tokenizer::token_bytes(uint32_t id, bool include_special) const {
  if (id < 256)
    return std::string(1, static_cast<char>(id));
  if (id == eos_id && include_special)
    return "<eos>";
  return {};
}

} // namespace dynamo::tok
