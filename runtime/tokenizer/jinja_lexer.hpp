// Lexing for the Jinja subset: template source -> text and tag segments (with
// whitespace control already applied), and tag content -> expression tokens.
// Internal to the jinja_* files. Pure functions; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::tok::jinja {

struct segment {
  enum class kind { text, output, block, comment } k = kind::text;
  std::string content; ///< text, or the tag's inner source without delimiters and -/+ markers
  int line = 1;        ///< line where the segment starts
};

/// Splits `src` into alternating text and tag segments (text first, possibly
/// empty), applying {%- -%} control plus trim_blocks and lstrip_blocks.
[[nodiscard]] expected<std::vector<segment>> split_segments(std::string_view src);

struct token {
  enum class kind { name, string, integer, real, op, end } k = kind::end;
  std::string text; ///< name, decoded string, or operator
  int64_t integer = 0;
  double real = 0;
};

/// Tokenizes the inside of one tag. Errors: unterminated strings, stray characters.
[[nodiscard]] expected<std::vector<token>> tokenize(std::string_view s, int line);

} // namespace dynamo::tok::jinja
