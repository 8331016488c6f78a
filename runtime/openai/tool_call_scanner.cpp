#include "runtime/openai/tool_call_scanner.hpp"

#include <nlohmann/json.hpp>

#include <string_view>

namespace dynamo::openai {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/// The text of a JSON string literal (quotes included), unescaped.
std::optional<std::string> string_value(const std::string& literal) {
  auto j = nlohmann::json::parse(literal, nullptr, false);
  if (j.is_discarded() || !j.is_string())
    return std::nullopt;
  return j.get<std::string>();
}

/// Characters of JSON's tokens outside strings: punctuation, numbers, and
/// the letters of true / false / null and exponents.
bool json_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("{}[],:\"-+.").find(c) != std::string_view::npos;
}

} // namespace

json_minifier::status json_minifier::feed(char c, std::string& out) {
  if (in_string_) {
    out += c;
    if (escaped_)
      escaped_ = false;
    else if (c == '\\')
      escaped_ = true;
    else if (c == '"')
      in_string_ = false;
    return status::more;
  }
  if (is_space(c))
    return status::more;
  if (!json_token_char(c))
    return status::invalid;
  out += c;
  if (c == '"')
    in_string_ = true;
  else if (c == '{' || c == '[')
    ++depth_;
  else if ((c == '}' || c == ']') && depth_ > 0 && --depth_ == 0)
    return status::closed;
  return status::more;
}

call_scanner::status call_scanner::feed(char c) {
  switch (state_) {
    case state::open:
      if (is_space(c))
        return status::more;
      if (c != '{')
        return status::failed;
      state_ = state::key_or_close;
      return status::more;
    case state::key_or_close:
      if (is_space(c))
        return status::more;
      if (c == '}')
        return close();
      if (c != '"')
        return status::failed;
      key_.clear();
      state_ = state::key;
      return status::more;
    case state::key:
      if (c == '"' && !escaped_) {
        state_ = state::colon;
        return status::more;
      }
      escaped_ = !escaped_ && c == '\\';
      key_ += c;
      return status::more;
    case state::colon:
      if (is_space(c))
        return status::more;
      if (c != ':')
        return status::failed;
      state_ = state::value;
      return status::more;
    case state::value: return on_value(c);
    case state::name: return on_string_char(c, state::name);
    case state::args_string: return on_string_char(c, state::args_string);
    case state::args_object:
      switch (args_.feed(c, pending_)) {
        case json_minifier::status::more: return status::more;
        case json_minifier::status::closed: state_ = state::after_value; return status::more;
        case json_minifier::status::invalid: return status::failed;
      }
      return status::failed;
    case state::skip: return on_skip(c);
    case state::after_value:
      if (is_space(c))
        return status::more;
      if (c == '}')
        return close();
      if (c != ',')
        return status::failed;
      state_ = state::key_or_close;
      return status::more;
  }
  return status::failed;
}

call_scanner::status call_scanner::on_value(char c) {
  if (is_space(c))
    return status::more;
  const bool args_key = !args_seen_ && (key_ == "arguments" || key_ == "parameters");
  if (key_ == "name" && !name_) {
    if (c != '"')
      return status::failed;
    str_ = c;
    state_ = state::name;
    return status::more;
  }
  if (args_key && c == '{') {
    args_seen_ = object_args_ = true;
    (void)args_.feed(c, pending_);
    state_ = state::args_object;
    return status::more;
  }
  if (args_key && c == '"') {
    args_seen_ = true;
    str_ = c;
    state_ = state::args_string;
    return status::more;
  }
  if (args_key)
    return status::failed; // arguments that are neither an object nor a string
  skip_depth_ = 0;
  skip_string_ = false;
  state_ = state::skip;
  return on_skip(c);
}

call_scanner::status call_scanner::on_string_char(char c, state current) {
  str_ += c;
  if (escaped_ || c == '\\') {
    escaped_ = !escaped_;
    return status::more;
  }
  if (c != '"')
    return status::more;
  if (current == state::name) {
    name_ = string_value(str_);
    if (!name_ || name_->empty())
      return status::failed;
  } else if (!string_args()) {
    return status::failed;
  }
  state_ = state::after_value;
  return status::more;
}

/// Arguments written as a string: it must hold one JSON object, whose
/// compact text becomes the arguments at once.
bool call_scanner::string_args() {
  auto text = string_value(str_);
  if (!text)
    return false;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return false;
  json_minifier m; // parsed above: every character is valid
  for (char ch : *text)
    (void)m.feed(ch, pending_);
  return true;
}

/// Skips the value of a key other than the name and the arguments.
call_scanner::status call_scanner::on_skip(char c) {
  if (skip_string_) {
    if (escaped_ || c == '\\')
      escaped_ = !escaped_;
    else if (c == '"')
      skip_string_ = false;
    if (!skip_string_ && skip_depth_ == 0)
      state_ = state::after_value;
    return status::more;
  }
  if (c == '"') {
    skip_string_ = true;
  } else if (c == '{' || c == '[') {
    ++skip_depth_;
  } else if (c == '}' || c == ']') {
    if (skip_depth_ == 0) { // a scalar ended by the object's close
      state_ = state::after_value;
      return feed(c);
    }
    if (--skip_depth_ == 0)
      state_ = state::after_value;
  } else if (c == ',' && skip_depth_ == 0) {
    state_ = state::after_value;
    return feed(c);
  }
  return status::more;
}

call_scanner::status call_scanner::close() {
  if (!name_)
    return status::failed;
  if (!args_seen_) {
    args_seen_ = true;
    pending_ = "{}";
  }
  return status::done;
}

} // namespace dynamo::openai
