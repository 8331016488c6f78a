#include "runtime/openai/output_parser.hpp"

#include "runtime/openai/json_fields.hpp"

#include "runtime/openai/response.hpp"

namespace dynamo::openai {

namespace {

using ojson = nlohmann::ordered_json;
using call_list = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view think_open = "<think>";
constexpr std::string_view think_close = "</think>";
constexpr std::string_view hermes_open = "<tool_call>";
constexpr std::string_view hermes_close = "</tool_call>";
constexpr std::string_view python_tag = "<|python_tag|>";
constexpr std::string_view mistral_marker = "[TOOL_CALLS]";
constexpr std::string_view mistral_args = "[ARGS]";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

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

/// End (one past) of the JSON object or array opening at s[0], or npos when
/// it does not close in `s`.
size_t json_value_end(std::string_view s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        return i + 1;
    }
  }
  return std::string_view::npos;
}

using detail::dump;

/// Arguments as the model wrote them: an object, or a string holding one.
std::optional<std::string> arguments_text(const ojson& args) {
  if (args.is_object())
    return dump(args);
  if (args.is_string()) {
    auto inner = ojson::parse(args.get<std::string>(), nullptr, false);
    if (!inner.is_discarded() && inner.is_object())
      return dump(inner);
  }
  return std::nullopt;
}

/// {"name": s, <key>: {...}} (the other key accepted too; absent: {}).
std::optional<std::pair<std::string, std::string>> read_call(const ojson& j, std::string_view key) {
  if (!j.is_object())
    return std::nullopt;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty())
    return std::nullopt;
  auto args = j.find(std::string(key));
  if (args == j.end())
    args = j.find(key == "arguments" ? "parameters" : "arguments");
  if (args == j.end())
    return std::make_pair(name->get<std::string>(), std::string("{}"));
  auto text = arguments_text(*args);
  if (!text)
    return std::nullopt;
  return std::make_pair(name->get<std::string>(), std::move(*text));
}

std::optional<ojson> parse_json(std::string_view s) {
  auto j = ojson::parse(s, nullptr, false);
  if (j.is_discarded())
    return std::nullopt;
  return j;
}

std::optional<call_list> parse_hermes(std::string_view body) {
  auto j = parse_json(strip(body));
  if (!j)
    return std::nullopt;
  auto call = read_call(*j, "arguments");
  if (!call)
    return std::nullopt;
  return call_list{std::move(*call)};
}

/// [<|python_tag|>] {..} [; {..}]...
std::optional<call_list> parse_llama3(std::string_view s) {
  s = lstrip(s);
  if (s.starts_with(python_tag))
    s = lstrip(s.substr(python_tag.size()));
  call_list out;
  while (!s.empty()) {
    if (s.front() != '{')
      return std::nullopt;
    const size_t end = json_value_end(s);
    if (end == std::string_view::npos)
      return std::nullopt;
    auto j = parse_json(s.substr(0, end));
    if (!j)
      return std::nullopt;
    auto call = read_call(*j, "parameters");
    if (!call)
      return std::nullopt;
    out.push_back(std::move(*call));
    s = lstrip(s.substr(end));
    if (!s.empty() && s.front() == ';')
      s = lstrip(s.substr(1));
  }
  if (out.empty())
    return std::nullopt;
  return out;
}

/// [TOOL_CALLS][{..}, ..] or ([TOOL_CALLS]name[ARGS]{..})+
std::optional<call_list> parse_mistral(std::string_view s) {
  s = lstrip(s);
  if (!s.starts_with(mistral_marker))
    return std::nullopt;
  s = lstrip(s.substr(mistral_marker.size()));
  call_list out;
  if (!s.empty() && s.front() == '[') {
    const size_t end = json_value_end(s);
    if (end == std::string_view::npos || !strip(s.substr(end)).empty())
      return std::nullopt;
    auto j = parse_json(s.substr(0, end));
    if (!j || !j->is_array() || j->empty())
      return std::nullopt;
    for (const auto& c : *j) {
      auto call = read_call(c, "arguments");
      if (!call)
        return std::nullopt;
      out.push_back(std::move(*call));
    }
    return out;
  }
  while (!s.empty()) {
    const size_t a = s.find(mistral_args);
    if (a == std::string_view::npos)
      return std::nullopt;
    std::string name{strip(s.substr(0, a))};
    s = lstrip(s.substr(a + mistral_args.size()));
    const size_t end = s.empty() || s.front() != '{' ? std::string_view::npos : json_value_end(s);
    if (name.empty() || end == std::string_view::npos)
      return std::nullopt;
    auto j = parse_json(s.substr(0, end));
    if (!j)
      return std::nullopt;
    auto args = arguments_text(*j);
    if (!args)
      return std::nullopt;
    out.emplace_back(std::move(name), std::move(*args));
    s = lstrip(s.substr(end));
    if (s.starts_with(mistral_marker))
      s = lstrip(s.substr(mistral_marker.size()));
  }
  if (out.empty())
    return std::nullopt;
  return out;
}

std::string random_call_id() { return "call_" + random_hex_id().substr(0, 24); }

/// Mistral's templates reject tool call ids that are not 9 alphanumerics, and
/// clients send our ids back in the history.
std::string random_mistral_id() { return random_hex_id().substr(0, 9); }

} // namespace

std::optional<call_list> parse_tool_block(tool_format f, std::string_view block) {
  switch (f) {
    case tool_format::hermes: return parse_hermes(block);
    case tool_format::llama3_json: return parse_llama3(block);
    case tool_format::mistral: return parse_mistral(block);
    case tool_format::none: break;
  }
  return std::nullopt;
}

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
      case phase::tail:
        more = false;
        if (at_end) {
          if (!emit_block(d, buf_))
            emit_content(d, buf_);
          buf_.clear();
          phase_ = phase::content;
        }
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
        if (s.starts_with(python_tag) || s.starts_with("{")) {
          phase_ = phase::tail;
          return true;
        }
        if (!at_end && python_tag.starts_with(s))
          return false;
      }
      break;
  }
  if (!marker.empty()) {
    if (const size_t pos = buf_.find(marker); pos != std::string::npos) {
      emit_content(d, std::string_view(buf_).substr(0, pos));
      if (opts_.tools == tool_format::hermes) {
        buf_.erase(0, pos + marker.size());
        phase_ = phase::call;
      } else {
        buf_.erase(0, pos); // Mistral's calls run to the end; the marker stays for parsing
        phase_ = phase::tail;
      }
      return true;
    }
  }
  const size_t keep = at_end || marker.empty() ? 0 : partial_marker(buf_, marker);
  emit_content(d, std::string_view(buf_).substr(0, buf_.size() - keep));
  buf_.erase(0, buf_.size() - keep);
  return false;
}

bool output_parser::step_call(output_delta& d, bool at_end) {
  constexpr size_t npos = std::string::npos;
  size_t pos = npos; // where </tool_call> starts
  const std::string_view s = lstrip(buf_);
  if (!s.empty() && s.front() == '{') {
    // The call's JSON decides where it ends: its strings may hold "</tool_call>".
    const size_t end = json_value_end(s);
    if (end == npos) {
      if (!at_end)
        return false;
    } else {
      const std::string_view after = lstrip(s.substr(end));
      const size_t at = buf_.size() - after.size();
      if (after.starts_with(hermes_close))
        pos = at;
      else if (!at_end && hermes_close.starts_with(after))
        return false;
      else
        pos = buf_.find(hermes_close, at);
    }
  } else {
    pos = buf_.find(hermes_close);
  }
  if (pos == npos && !at_end)
    return false;
  // At the end without </tool_call> (a stop token ended it): parse what there is.
  const std::string_view body = std::string_view(buf_).substr(0, pos);
  if (!emit_block(d, body)) {
    std::string raw = std::string(hermes_open) + std::string(body);
    if (pos != npos)
      raw += hermes_close;
    emit_content(d, raw);
  }
  buf_.erase(0, pos == npos ? buf_.size() : pos + hermes_close.size());
  phase_ = phase::content;
  return true;
}

bool output_parser::emit_block(output_delta& d, std::string_view block) {
  auto calls = parse_tool_block(opts_.tools, block);
  if (!calls)
    return false;
  for (auto& [name, args] : *calls)
    emit_call(d, std::move(name), std::move(args));
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

void output_parser::emit_call(output_delta& d, std::string name, std::string arguments) {
  held_ws_.clear();
  const auto index = static_cast<uint32_t>(calls_.size());
  tool_call c{ids_(), std::move(name), std::move(arguments)};
  d.calls.push_back({index, c.id, c.name, ""});
  d.calls.push_back({index, std::nullopt, std::nullopt, c.arguments});
  calls_.push_back(std::move(c));
}

} // namespace dynamo::openai
