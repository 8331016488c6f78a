// Regular expressions (an ECMAScript-like subset) and choice lists as grammar
// expressions: for guided_regex / guided_choice, and for JSON Schema `pattern`
// (then every character is written as it appears inside a JSON string).
// Called by the API layer and the JSON Schema compiler; pure functions.
#pragma once

#include "runtime/grammar/grammar.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dynamo::gram {

/// Supported: literals (UTF-8), escapes \d \w \s \D \W \S \n \t \r \f \v \0
/// \xHH \uHHHH \u{H..} and escaped punctuation, `.` (any code point except
/// \n and \r), classes [..] and [^..] with ranges, groups (..), (?:..),
/// (?<name>..), alternation, ? * + {m} {m,} {m,n} (lazy forms match the same
/// language). The match is always whole (anchors implied; a leading ^ and a
/// trailing $ are accepted). Errors: errc::unsupported naming the construct
/// (backreferences, lookaround, \b, inner anchors), errc::invalid_argument
/// for malformed patterns, both with the offset.
struct regex_options {
  /// Emit characters JSON-escaped ('"' as \", '\' as \\, controls as \n, \u00XX)
  /// for use inside a JSON string literal.
  bool json_string = false;
};

[[nodiscard]] expected<expr_id> add_regex(grammar& g, std::string_view pattern, const regex_options& o = {});

/// A grammar matching exactly `pattern`.
[[nodiscard]] expected<grammar> regex_grammar(std::string_view pattern);

/// A grammar matching exactly one of `choices` (errc::invalid_argument when empty).
[[nodiscard]] expected<grammar> choice_grammar(const std::vector<std::string>& choices);

/// The JSON-string form of code point `cp` (its escape when it needs one).
[[nodiscard]] std::string json_escape_cp(char32_t cp);

/// Decodes one UTF-8 code point at `s[i]`, advancing `i`; an invalid
/// sequence gives invalid_cp (and advances by one byte).
inline constexpr char32_t invalid_cp = 0xFFFFFFFF;
[[nodiscard]] char32_t decode_utf8(std::string_view s, size_t& i);

} // namespace dynamo::gram
