#include "runtime/openai/output_parser.hpp"

#include "runtime/openai/response.hpp"

#include <algorithm>

namespace dynamo::openai {

namespace {

constexpr std::string_view think_open = "<think>";
constexpr std::string_view think_close = "</think>";
constexpr std::string_view hermes_open = "<tool_call>";
constexpr std::string_view hermes_close = "</tool_call>";
constexpr std::string_view python_tag = "<|python_tag|>";
constexpr std::string_view mistral_marker = "[TOOL_CALLS]";
constexpr std::string_view mistral_args = "[ARGS]";
constexpr size_t npos = std::string::npos;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::string_view lstrip(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  return s;
}

std::string_view strip(std::string_view s) {
  s = lstrip(s);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

/// Length of the longest suffix of `s` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view s, std::string_view marker) {
  for (size_t k = std::min(s.size(), marker.size() - 1); k > 0; --k)
    if (s.substr(s.size() - k) == marker.substr(0, k))
      return k;
  return 0;
}

std::string random_call_id() { return "call_" + random_hex_id().substr(0, 24); }

/// Mistral's templates reject tool call ids that are not 9 alphanumerics, and
/// clients send our ids back in the history.
std::string random_mistral_id() { return random_hex_id().substr(0, 9); }

} // namespace

output_parser::output_parser(options o, id_source ids)
  : opts_(o),
    ids_(ids                               ? std::move(ids)
         : o.tools == tool_format::mistral ? id_source(random_mistral_id)
                                           : id_source(random_call_id)),
    phase_(!o.reasoning ? phase::content : o.starts_in_reasoning ? phase::thinking : phase::think_start),
    content_started_(o.tools == tool_format::none) {}

output_delta output_parser::push(std::string_view text) {
  output_delta d;
  buf_ += text;
  step(d, false);
  return d;
}

output_delta output_parser::finish() {
  output_delta d;
  step(d, true);
  if (calls_.empty())
    d.content += held_ws_;
  held_ws_.clear();
  return d;
}

void output_parser::step(output_delta& d, bool at_end) {
  for (bool more = true; more;) {
    switch (phase_) {
      case phase::think_start: more = step_think_start(at_end); break;
      case phase::thinking: more = step_thinking(d, at_end); break;
      case phase::content: more = step_content(d, at_end); break;
      case phase::call: more = step_call(d, at_end); break;
      case phase::stopped:
        buf_.clear();
        more = false;
        break;
    }
  }
}

bool output_parser::step_think_start(bool at_end) {
  const std::string_view s = lstrip(buf_);
  if (s.starts_with(think_open)) {
    buf_.erase(0, buf_.size() - s.size() + think_open.size());
    phase_ = phase::thinking;
    return true;
  }
  if (!at_end && think_open.starts_with(s))
    return false; // may still become <think>
  phase_ = phase::content;
  return true;
}

bool output_parser::step_thinking(output_delta& d, bool at_end) {
  if (const size_t pos = buf_.find(think_close); pos != std::string::npos) {
    d.reasoning.append(buf_, 0, pos);
    buf_.erase(0, pos + think_close.size());
    phase_ = phase::content;
    content_started_ = false; // the blank lines after </think> are not content
    return true;
  }
  const size_t keep = at_end ? 0 : partial_marker(buf_, think_close);
  d.reasoning.append(buf_, 0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  return false;
}


bool output_parser::step_content(output_delta& d, bool at_end) {
  std::string_view marker;
  switch (opts_.tools) {
    case tool_format::none: break;
    case tool_format::hermes: marker = hermes_open; break;
    case tool_format::mistral: marker = mistral_marker; break;
    case tool_format::llama3_json:
      // A Llama 3 call is the whole output: it opens with <|python_tag|> or "{".
      if (calls_.empty() && !content_started_) {
        const std::string_view s = lstrip(buf_);
        const bool tag = s.starts_with(python_tag);
        if (tag || s.starts_with("{")) {
          const size_t n = buf_.size() - s.size() + (tag ? python_tag.size() : 0);
          const std::string raw = buf_.substr(0, n);
          buf_.erase(0, n);
          begin_call(frame::llama3_body, raw);
          return true;
        }
        if (!at_end && python_tag.starts_with(s))
          return false;
      }
      break;
  }
  if (!marker.empty()) {
    if (const size_t pos = buf_.find(marker); pos != npos) {
      emit_content(d, std::string_view(buf_).substr(0, pos));
      buf_.erase(0, pos + marker.size());
      begin_call(opts_.tools == tool_format::hermes ? frame::hermes_body : frame::mistral_open, marker);
      return true;
    }
  }
  const size_t keep = at_end || marker.empty() ? 0 : partial_marker(buf_, marker);
  emit_content(d, std::string_view(buf_).substr(0, buf_.size() - keep));
  buf_.erase(0, buf_.size() - keep);
  return false;
}

void output_parser::begin_call(frame f, std::string_view raw) {
  phase_ = phase::call;
  frame_ = f;
  raw_ = raw;
  released_ = false;
  scanner_ = {};
  args_ = {};
  name_.clear();
}

bool output_parser::step_call(output_delta& d, bool at_end) {
  switch (frame_) {
    case frame::hermes_body:
    case frame::hermes_close: return step_hermes(d, at_end);
    case frame::llama3_body:
    case frame::llama3_next: return step_llama3(d, at_end);
    case frame::mistral_open:
    case frame::mistral_item:
    case frame::mistral_next: return step_mistral(d, at_end);
    case frame::mistral_name:
    case frame::mistral_args_open:
    case frame::mistral_args: return step_mistral_name(d, at_end);
  }
  return false;
}

output_parser::fed output_parser::feed_call(output_delta& d, bool at_end) {
  using status = call_scanner::status;
  status st = status::more;
  size_t i = 0;
  while (i < buf_.size() && st == status::more) {
    st = scanner_.feed(buf_[i]);
    if (st != status::failed)
      ++i;
  }
  raw_.append(buf_, 0, i);
  buf_.erase(0, i);
  // The call is released once its arguments object opens (or it closed
  // whole): from there on, what follows is its arguments.
  if (!released_ && scanner_.name() && (scanner_.arguments_open() || st == status::done))
    emit_call(d, *scanner_.name());
  if (released_)
    emit_arguments(d, scanner_.take_arguments());
  if (st == status::done || (released_ && (st == status::failed || at_end)))
    return fed::done; // a released call ends where its text stops making sense
  if (st == status::failed || at_end)
    return fed::failed;
  return fed::more;
}

bool output_parser::fail_call(output_delta& d) {
  emit_content(d, raw_);
  raw_.clear();
  phase_ = phase::content;
  return true;
}

bool output_parser::stop_at_max() {
  if (opts_.max_calls == 0 || calls_.size() < opts_.max_calls)
    return false;
  phase_ = phase::stopped;
  buf_.clear();
  return true;
}

bool output_parser::step_object(output_delta& d, bool at_end, frame next) {
  switch (feed_call(d, at_end)) {
    case fed::more: return false;
    case fed::failed: return fail_call(d);
    case fed::done:
      if (stop_at_max())
        return false;
      frame_ = next;
      return true;
  }
  return false;
}

bool output_parser::step_hermes(output_delta& d, bool at_end) {
  if (frame_ == frame::hermes_body)
    return step_object(d, at_end, frame::hermes_close);
  // After the object: </tool_call>, else what follows is content.
  const std::string_view s = lstrip(buf_);
  if (s.starts_with(hermes_close))
    buf_.erase(0, buf_.size() - s.size() + hermes_close.size());
  else if (!at_end && hermes_close.starts_with(s))
    return false;
  phase_ = phase::content;
  return true;
}

bool output_parser::step_llama3(output_delta& d, bool at_end) {
  if (frame_ == frame::llama3_body)
    return step_object(d, at_end, frame::llama3_next);
  // Between calls: "; {" or "{" starts the next, anything else is content.
  const std::string_view s = lstrip(buf_);
  if (s.empty() && !at_end)
    return false;
  if (!s.empty() && (s.front() == ';' || s.front() == '{')) {
    const size_t n = buf_.size() - s.size() + (s.front() == ';' ? 1 : 0);
    const std::string raw = buf_.substr(0, n);
    buf_.erase(0, n);
    begin_call(frame::llama3_body, raw);
    return true;
  }
  phase_ = phase::content;
  return true;
}

bool output_parser::step_mistral(output_delta& d, bool at_end) {
  if (frame_ == frame::mistral_item)
    return step_object(d, at_end, frame::mistral_next);
  const std::string_view s = lstrip(buf_);
  if (s.empty()) {
    if (!at_end)
      return false;
    if (frame_ == frame::mistral_open)
      return fail_call(d);
    phase_ = phase::content;
    return true;
  }
  const size_t n = buf_.size() - s.size() + 1; // the whitespace and s.front()
  if (frame_ == frame::mistral_open) {
    if (s.front() != '[') {
      frame_ = frame::mistral_name;
      return true;
    }
    raw_.append(buf_, 0, n);
    buf_.erase(0, n);
    frame_ = frame::mistral_item;
    return true;
  }
  // mistral_next: "," starts the next call, "]" ends the array.
  if (s.front() == ',') {
    const std::string raw = buf_.substr(0, n);
    buf_.erase(0, n);
    begin_call(frame::mistral_item, raw);
    return true;
  }
  if (s.front() == ']')
    buf_.erase(0, n);
  phase_ = phase::content;
  return true;
}

bool output_parser::step_mistral_name(output_delta& d, bool at_end) {
  if (frame_ == frame::mistral_name) {
    // The name, a character at a time: it fails where a character cannot
    // continue it, whatever the split.
    size_t i = 0;
    for (; i < buf_.size() && !std::string_view(buf_).substr(i).starts_with(mistral_args); ++i) {
      const char c = buf_[i];
      const bool after_name = !lstrip(name_).empty() && is_space(name_.back());
      if (!is_space(c) && (!is_name_char(c) || after_name))
        break;
      name_ += c;
    }
    raw_.append(buf_, 0, i);
    buf_.erase(0, i);
    if (!buf_.starts_with(mistral_args)) {
      if (at_end || !mistral_args.starts_with(buf_))
        return fail_call(d);
      return false; // empty, or the start of [ARGS]
    }
    if (strip(name_).empty())
      return fail_call(d);
    raw_ += mistral_args;
    buf_.erase(0, mistral_args.size());
    frame_ = frame::mistral_args_open;
  }
  if (frame_ == frame::mistral_args_open) {
    const std::string_view s = lstrip(buf_);
    if (s.empty())
      return at_end ? fail_call(d) : false;
    if (s.front() != '{')
      return fail_call(d);
    buf_.erase(0, buf_.size() - s.size());
    emit_call(d, std::string(strip(name_)));
    frame_ = frame::mistral_args;
  }
  std::string text;
  auto st = json_minifier::status::more;
  size_t i = 0;
  for (; i < buf_.size() && st == json_minifier::status::more; ++i)
    if ((st = args_.feed(buf_[i], text)) == json_minifier::status::invalid)
      break; // not arguments: ends them, and is content
  buf_.erase(0, i);
  emit_arguments(d, text);
  if (st == json_minifier::status::more && !at_end)
    return false;
  if (stop_at_max())
    return false;
  phase_ = phase::content;
  return true;
}

void output_parser::emit_content(output_delta& d, std::string_view text) {
  if (text.empty())
    return;
  std::string s = held_ws_;
  s += text;
  held_ws_.clear();
  if (!content_started_) {
    s.erase(0, s.size() - lstrip(s).size());
    if (s.empty())
      return;
    content_started_ = true;
  }
  if (opts_.tools != tool_format::none) { // trailing whitespace waits: a call may follow
    size_t end = s.size();
    while (end > 0 && is_space(s[end - 1]))
      --end;
    held_ws_ = s.substr(end);
    s.resize(end);
  }
  d.content += s;
}

void output_parser::emit_call(output_delta& d, std::string name) {
  held_ws_.clear();
  raw_.clear();
  released_ = true;
  const auto index = static_cast<uint32_t>(calls_.size());
  calls_.push_back({ids_(), std::move(name), ""});
  d.calls.push_back({index, calls_.back().id, calls_.back().name, ""});
}

void output_parser::emit_arguments(output_delta& d, std::string_view text) {
  if (text.empty())
    return;
  calls_.back().arguments += text;
  const auto index = static_cast<uint32_t>(calls_.size() - 1);
  if (!d.calls.empty() && d.calls.back().index == index && !d.calls.back().id)
    d.calls.back().arguments += text; // fragments of one push go out together
  else
    d.calls.push_back({index, std::nullopt, std::nullopt, std::string(text)});
}

} // namespace dynamo::openai
