#include "runtime/openai/text_stream.hpp"

#include <algorithm>

namespace dynamo::openai {

text_stream::text_stream(const tok::tokenizer& tk, std::vector<std::string> stop_strings)
  : detok_(tk), stops_(std::move(stop_strings)) {}

text_stream::step text_stream::push(const protocol::engine_output& out) {
  step s;
  if (done_)
    return s;
  cached_ = std::max(cached_, out.cached_tokens);
  for (auto id : out.token_ids) {
    ++s.tokens;
    auto r = stops_.push(detok_.push(id));
    s.text += r.text;
    if (r.stopped) {
      s.done = done_ = true;
      s.finish = protocol::finish_reason::stop;
      s.cancel_backend = out.finish == protocol::finish_reason::none;
      tokens_ += s.tokens;
      return s;
    }
  }
  tokens_ += s.tokens;
  if (out.finish == protocol::finish_reason::none)
    return s;
  // End of stream: release what the detokenizer and the stop matcher held back.
  auto r = stops_.push(detok_.flush());
  s.text += r.text;
  if (!r.stopped)
    s.text += stops_.flush();
  s.done = done_ = true;
  s.finish = r.stopped ? protocol::finish_reason::stop : out.finish;
  return s;
}

} // namespace dynamo::openai
