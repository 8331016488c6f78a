// Reads one tool call's JSON as the model writes it, one character at a time:
// the call object {"name": .., "arguments"|"parameters": {..}} (call_scanner)
// and an arguments object alone (json_minifier), so that the output_parser can
// release a call's name once it is known and its arguments as they are written.
// Used by output_parser only; plain values, not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace dynamo::openai {

/// Streams one JSON object or array that starts with its first character,
/// dropping the whitespace outside strings. It tracks nesting and strings and
/// refuses a character that no JSON token holds (such as the "<" of an end
/// marker); it does not validate further.
class json_minifier {
public:
  enum class status : uint8_t {
    more,    ///< `c` was taken (appended unless whitespace between tokens)
    closed,  ///< `c` closed the value (the first character must open it)
    invalid, ///< `c` cannot be in JSON outside a string (not taken)
  };
  [[nodiscard]] status feed(char c, std::string& out);

private:
  uint32_t depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

/// One call object: {"name": "<string>", "arguments": {..}} ("parameters" is
/// read the same; other keys are skipped). Leading whitespace is skipped.
/// Arguments given as a string holding a JSON object count once the string
/// closes; absent arguments are "{}".
class call_scanner {
public:
  enum class status : uint8_t {
    more,   ///< the object is still open
    done,   ///< `c` closed the object, which had a name
    failed, ///< `c` cannot continue a call object (it was not consumed)
  };
  /// REQUIRES: every earlier feed returned more.
  [[nodiscard]] status feed(char c);

  /// The name, once its string has closed.
  [[nodiscard]] const std::optional<std::string>& name() const noexcept { return name_; }
  /// The arguments are an object whose text is being (or has been) read:
  /// what follows is arguments text, whatever it turns out to be.
  [[nodiscard]] bool arguments_open() const noexcept { return object_args_; }
  /// Arguments text (compact) read since the last take.
  [[nodiscard]] std::string take_arguments() { return std::exchange(pending_, {}); }

private:
  enum class state : uint8_t { open, key_or_close, key, colon, value, name, args_object, args_string, skip, after_value };
  status on_value(char c);
  status on_string_char(char c, state next);
  status on_skip(char c);
  status close();
  [[nodiscard]] bool string_args();

  state state_ = state::open;
  std::string key_;     ///< the current key, as written (escapes kept)
  std::string str_;     ///< a string value being read, quotes included
  bool escaped_ = false;
  std::optional<std::string> name_;
  bool args_seen_ = false;
  bool object_args_ = false;
  json_minifier args_;
  std::string pending_;
  uint32_t skip_depth_ = 0;
  bool skip_string_ = false;
};

} // namespace dynamo::openai
