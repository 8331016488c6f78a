#include "runtime/tokenizer/detokenizer.hpp"

#include <algorithm>
#include <utility>

namespace dynamo::tok {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD"; // U+FFFD

size_t sequence_length(unsigned char lead) noexcept {
  if (lead < 0x80)
    return 1;
  if (lead >= 0xC2 && lead <= 0xDF)
    return 2;
  if (lead >= 0xE0 && lead <= 0xEF)
    return 3;
  if (lead >= 0xF0 && lead <= 0xF4)
    return 4;
  return 0; // continuation byte, overlong lead (C0/C1) or beyond U+10FFFF
}

// Valid range of the second byte given the lead (rejects overlongs and surrogates).
bool second_byte_ok(unsigned char lead, unsigned char b) noexcept {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return (b & 0xC0) == 0x80;
  }
}

} // namespace

size_t utf8_complete_prefix(std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto lead = static_cast<unsigned char>(s[i]);
    size_t len = sequence_length(lead);
    if (len == 0) {
      out += replacement;
      ++i;
      continue;
    }
    size_t j = 1;
    bool bad = false;
    for (; j < len && i + j < s.size(); ++j) {
      auto b = static_cast<unsigned char>(s[i + j]);
      if (j == 1 ? !second_byte_ok(lead, b) : (b & 0xC0) != 0x80) {
        bad = true;
        break;
      }
    }
    if (bad) {
      out += replacement;
      ++i;
      continue;
    }
    if (j < len)
      break; // a valid but incomplete tail: wait for more bytes
    out.append(s, i, len);
    i += len;
  }
  const size_t complete = out.size();
  out.append(s, i, std::string::npos);
  s = std::move(out);
  return complete;
}

std::string incremental_detokenizer::push(uint32_t id) {
  pending_ += tk_->token_bytes(id, include_special_);
  size_t n = utf8_complete_prefix(pending_);
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

std::string incremental_detokenizer::flush() {
  size_t n = utf8_complete_prefix(pending_);
  std::string out = pending_.substr(0, n);
  if (n < pending_.size())
    out += replacement;
  pending_.clear();
  return out;
}

stop_matcher::stop_matcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

stop_matcher::result stop_matcher::push(std::string_view text) {
  result r;
  if (stopped_)
    return r;
  held_.append(text);
  // Earliest full match wins.
  size_t best = std::string::npos;
  for (const auto& stop : stops_)
    best = std::min(best, held_.find(stop));
  if (best != std::string::npos) {
    r.text = held_.substr(0, best);
    r.stopped = stopped_ = true;
    held_.clear();
    return r;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& stop : stops_) {
    size_t max_len = std::min(stop.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, stop, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  r.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return r;
}

std::string stop_matcher::flush() {
  if (stopped_)
    return {};
  return std::exchange(held_, {});
}

} // namespace dynamo::tok
