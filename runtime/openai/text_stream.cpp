#include "runtime/openai/text_stream.hpp"

#include <algorithm>

namespace dynamo::openai {

namespace {

uint32_t code_points(std::string_view utf8) {
  return static_cast<uint32_t>(
    std::count_if(utf8.begin(), utf8.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

} // namespace

text_stream::text_stream(const tok::tokenizer& tk, std::vector<std::string> stop_strings,
                         std::vector<uint32_t> stop_token_ids, bool logprobs, bool include_special)
  : tk_(&tk), detok_(tk, include_special), stops_(std::move(stop_strings)),
    stop_token_ids_(std::move(stop_token_ids)), logprobs_(logprobs), include_special_(include_special) {}

logprob_entry text_stream::entry(const protocol::engine_output& out, size_t i) const {
  return entry(out.token_ids[i], out.logprobs[i]);
}

logprob_entry text_stream::entry(uint32_t id, const protocol::token_logprob& lp) const {
  logprob_entry e{tk_->token_bytes(id, /*include_special=*/true), lp.logprob, {}, chars_};
  e.top.reserve(lp.top.size());
  for (const protocol::top_logprob& t : lp.top)
    e.top.push_back({tk_->token_bytes(t.token, /*include_special=*/true), t.logprob});
  return e;
}

expected<text_stream::step> text_stream::echo(std::span<const uint32_t> prompt, std::string text,
                                              std::span<const protocol::token_logprob> lps) {
  if (logprobs_ && lps.size() + 1 != prompt.size())
    return make_error(errc::internal, "the backend sent " + std::to_string(lps.size()) +
                                          " prompt logprobs for a prompt of " + std::to_string(prompt.size()) +
                                          " tokens");
  step s;
  tok::incremental_detokenizer detok(*tk_, include_special_);
  std::string decoded;
  for (size_t p = 0; p < prompt.size(); ++p) {
    if (logprobs_) {
      s.logprobs.push_back(entry(prompt[p], p == 0 ? protocol::token_logprob{} : lps[p - 1]));
      s.logprobs.back().no_logprob = p == 0;
    }
    const std::string piece = detok.push(prompt[p]);
    chars_ += code_points(piece);
    decoded += piece;
  }
  decoded += detok.flush();
  s.text = text.empty() ? std::move(decoded) : std::move(text);
  chars_ = code_points(s.text);
  return s;
}

text_stream::step text_stream::push(const protocol::engine_output& out) {
  step s;
  if (done_)
    return s;
  cached_ = std::max(cached_, out.cached_tokens);
  const protocol::finish_reason end = out.choice_end();
  size_t n = out.token_ids.size();
  // A stop token that ended the choice counts, but is not text.
  const bool stop_token = end == protocol::finish_reason::stop && n > 0 &&
                          std::find(stop_token_ids_.begin(), stop_token_ids_.end(),
                                    out.token_ids[n - 1]) != stop_token_ids_.end();
  if (stop_token)
    --n;
  const bool with_logprobs = logprobs_ && out.logprobs.size() == out.token_ids.size();
  for (size_t i = 0; i < n; ++i) {
    ++s.tokens; // tokens after a stop string's match are not the client's
    ++tokens_;
    if (with_logprobs)
      s.logprobs.push_back(entry(out, i));
    const std::string piece = detok_.push(out.token_ids[i]);
    chars_ += code_points(piece);
    auto r = stops_.push(piece);
    s.text += r.text;
    if (r.stopped) {
      s.done = done_ = true;
      s.finish = protocol::finish_reason::stop;
      s.cancel_backend = end == protocol::finish_reason::none;
      return s;
    }
  }
  if (stop_token) {
    ++s.tokens;
    ++tokens_;
  }
  if (end == protocol::finish_reason::none)
    return s;
  // End of the choice: release what the detokenizer and the stop matcher held back.
  auto r = stops_.push(detok_.flush());
  s.text += r.text;
  if (!r.stopped)
    s.text += stops_.flush();
  s.done = done_ = true;
  s.finish = r.stopped ? protocol::finish_reason::stop : end;
  return s;
}

} // namespace dynamo::openai
