#include "runtime/openai/response_assembler.hpp"

#include <algorithm>
#include <utility>
#include <variant>

namespace dynamo::openai {

response_assembler::response_assembler(const tok::tokenizer& tk, response_meta meta, options o)
  : meta_(std::move(meta)), opts_(std::move(o)), open_(std::max(1u, opts_.n)) {
  texts_.reserve(open_);
  results_.resize(open_);
  parsers_.reserve(open_);
  for (uint32_t i = 0; i < open_; ++i) {
    texts_.emplace_back(tk, opts_.stop, opts_.stop_token_ids, opts_.logprobs, opts_.include_special);
    parsers_.emplace_back(opts_.parse);
    results_[i].index = i;
    if (opts_.logprobs)
      results_[i].logprobs.emplace();
  }
}

std::vector<std::string> response_assembler::opening() const {
  std::vector<std::string> out;
  if (opts_.chat)
    for (uint32_t i = 0; i < texts_.size(); ++i)
      out.push_back(chat_role_chunk(meta_, i, opts_.include_usage));
  return out;
}

void response_assembler::apply_parsed(uint32_t index, text_stream::step& s, update& u) {
  output_parser& p = parsers_[index];
  output_delta d = p.push(s.text);
  if (p.stopped() && !s.done) { // max_calls reached: the choice ends here
    texts_[index].end();
    s.done = true;
    s.finish = protocol::finish_reason::stop;
  }
  if (s.done) {
    output_delta last = p.finish();
    d.reasoning += last.reasoning;
    d.content += last.content;
    std::move(last.calls.begin(), last.calls.end(), std::back_inserter(d.calls));
  }
  choice_result& r = results_[index];
  if (opts_.stream) {
    auto chunks = chat_delta_chunks(meta_, index, d, opts_.logprobs ? &s.logprobs : nullptr,
                                    opts_.include_usage);
    std::move(chunks.begin(), chunks.end(), std::back_inserter(u.events));
    if (s.done)
      u.events.push_back(chat_finish_chunk(meta_, index, s.finish, opts_.include_usage,
                                           !p.calls().empty()));
  } else {
    r.reasoning += d.reasoning;
    r.text += d.content;
    if (r.logprobs)
      std::move(s.logprobs.begin(), s.logprobs.end(), std::back_inserter(*r.logprobs));
    if (s.done) {
      r.tool_calls = p.calls();
      r.null_empty_content = true;
    }
  }
  if (s.done) {
    r.finish = s.finish;
    --open_;
  }
}

void response_assembler::apply(uint32_t index, text_stream::step s, update& u) {
  u.tokens += s.tokens;
  if (opts_.chat && parsers_[index].active())
    return apply_parsed(index, s, u);
  choice_result& r = results_[index];
  if (opts_.stream) {
    const auto* lp = opts_.logprobs ? &s.logprobs : nullptr;
    if (!s.text.empty() || !s.logprobs.empty())
      u.events.push_back(opts_.chat ? chat_content_chunk(meta_, index, s.text, lp, opts_.include_usage)
                                    : completion_chunk(meta_, index, s.text, lp,
                                                       protocol::finish_reason::none,
                                                       opts_.include_usage));
    if (s.done)
      u.events.push_back(opts_.chat ? chat_finish_chunk(meta_, index, s.finish, opts_.include_usage)
                                    : completion_chunk(meta_, index, "", nullptr, s.finish,
                                                       opts_.include_usage));
  } else {
    r.text += s.text;
    if (r.logprobs)
      std::move(s.logprobs.begin(), s.logprobs.end(), std::back_inserter(*r.logprobs));
  }
  if (s.done) {
    r.finish = s.finish;
    --open_;
  }
}

namespace {

/// `out` without its tokens, a choice it ends ending with "length" (echo with max_tokens 0).
protocol::engine_output without_output(const protocol::engine_output& out) {
  protocol::engine_output o = out;
  o.token_ids.clear();
  o.logprobs.clear();
  if (o.finish != protocol::finish_reason::none)
    o.finish = protocol::finish_reason::length;
  if (o.choice_finish != protocol::finish_reason::none)
    o.choice_finish = protocol::finish_reason::length;
  return o;
}

} // namespace

expected<response_assembler::update> response_assembler::push(const protocol::engine_output& chunk) {
  update u;
  if (chunk.index >= texts_.size())
    return make_error(errc::internal, "the backend sent choice " + std::to_string(chunk.index) +
                                          " of a request with " + std::to_string(texts_.size()));
  if (opts_.echo && !std::exchange(echoed_, true)) {
    auto s = texts_[0].echo(opts_.echo->tokens, opts_.echo->text, chunk.prompt_logprobs);
    if (!s)
      return std::move(s.error());
    apply(0, std::move(*s), u);
  }
  const bool drop = opts_.echo && opts_.echo->drop_output;
  const protocol::engine_output& out = drop ? without_output(chunk) : chunk;
  if (!texts_[out.index].done())
    apply(out.index, texts_[out.index].push(out), u);
  if (out.finish != protocol::finish_reason::none) {
    // The stream ends: a choice the backend did not end explicitly ends with it.
    protocol::engine_output last;
    last.finish = out.finish;
    for (uint32_t i = 0; i < texts_.size(); ++i)
      if (!texts_[i].done())
        apply(i, texts_[i].push(last), u);
  }
  u.done = done();
  u.cancel_backend = u.done && out.finish == protocol::finish_reason::none;
  return u;
}

std::vector<std::string> response_assembler::closing() const {
  if (!opts_.include_usage)
    return {};
  return {opts_.chat ? chat_usage_chunk(meta_, usage()) : completion_usage_chunk(meta_, usage())};
}

std::string response_assembler::body() const {
  return opts_.chat ? chat_completion_body(meta_, results_, usage())
                    : completion_body(meta_, results_, usage());
}

usage_counts response_assembler::usage() const {
  usage_counts u{opts_.prompt_tokens, 0, 0};
  for (const text_stream& t : texts_) {
    u.completion_tokens += t.completion_tokens();
    u.cached_tokens = std::max(u.cached_tokens, t.cached_tokens());
  }
  return u;
}

std::optional<response_assembler::options::echo_prompt>
echo_prompt_of(const completion_request& req, const protocol::preprocessed_request& pre) {
  if (!req.params.echo)
    return std::nullopt;
  const auto* text = std::get_if<std::string>(&req.prompt);
  return response_assembler::options::echo_prompt{pre.token_ids, text ? *text : std::string{},
                                                  req.params.max_tokens == 0u};
}

} // namespace dynamo::openai
